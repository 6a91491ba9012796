#!/usr/bin/env python3
"""Build the events of types the shared fixtures lack from the objects a
running stripe-mock returns (its embedded OpenAPI fixtures), wrapped in
event envelopes as build_events.py wraps them.

Usage: stripe-mock -http-port 12111 & python3 build_mock_events.py
"""
import json, os, urllib.request, base64, copy

HERE = os.path.dirname(os.path.abspath(__file__))
MOCK = "http://localhost:12111"
API_VERSION = "2025-08-27.basil"
T0 = 1756742400
CUS = "cus_QXg1o8vcGmoR32"
ACCT_A = "acct_1Pgc8aB7WZ01zgkW"
ACCT_B = "acct_1Pgc8bQ2XY34zgkA"


def get(path, method="GET"):
    req = urllib.request.Request(MOCK + path, method=method)
    req.add_header("Authorization", "Basic " + base64.b64encode(b"sk_test_123:").decode())
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def stripe_order(obj):
    if isinstance(obj, list):
        return [stripe_order(x) for x in obj]
    if not isinstance(obj, dict):
        return obj
    head = [k for k in ("id", "object") if k in obj]
    rest = sorted(k for k in obj if k not in head)
    return {k: stripe_order(obj[k]) for k in head + rest}


def envelope(evt_id, typ, created, obj, account=None, livemode=False, previous=None):
    data = {"object": stripe_order(obj)}
    if previous is not None:
        data["previous_attributes"] = stripe_order(previous)
    env = {"id": evt_id, "object": "event"}
    if account is not None:
        env["account"] = account
    env.update({
        "api_version": API_VERSION, "created": created, "data": data,
        "livemode": livemode, "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None}, "type": typ,
    })
    return env


def write(name, ev):
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(ev, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main():
    bal = get("/v1/balance")
    bal["available"][0]["amount"] = 2000
    write("balance.available", envelope("evt_1S2m01B7WZ01zgkWbA1aNceA", "balance.available", T0 + 900, bal))

    for acct, name, evt in ((ACCT_A, "account.updated", "evt_1S2m02B7WZ01zgkWacCtUpdA"),):
        a = get("/v1/accounts/" + acct)
        a["created"] = T0 - 86400
        write(name, envelope(evt, "account.updated", T0 + 60, a, account=acct,
                             previous={"charges_enabled": False}))

    for acct, name, evt in ((ACCT_A, "capability.updated", "evt_1S2m03B7WZ01zgkWcApAbLeA"),
                            (ACCT_B, "capability.updated.other_account", "evt_1S2m04Q2XY34zgkAcApAbLeB")):
        c = get("/v1/accounts/%s/capabilities/card_payments" % acct)
        c["requested_at"] = T0 - 3600
        write(name, envelope(evt, "capability.updated", T0 + 120, c, account=acct,
                             previous={"status": "pending"}))

    app = {"id": "ca_QXg2PlatformAppB7WZ01zgkW", "object": "application", "name": "Platform"}
    write("account.application.authorized", envelope("evt_1S2m05B7WZ01zgkWaPpAuThA",
          "account.application.authorized", T0 + 30, app, account=ACCT_A))
    write("account.application.authorized.other_account", envelope("evt_1S2m06Q2XY34zgkAaPpAuThB",
          "account.application.authorized", T0 + 30, app, account=ACCT_B))

    po = get("/v1/payouts/po_1S2m07B7WZ01zgkWpOuT1a2b")
    po.update({"created": T0 + 3600, "arrival_date": T0 + 86400, "status": "paid"})
    write("payout.paid", envelope("evt_1S2m07B7WZ01zgkWpAyOuTaA", "payout.paid", T0 + 86400, po,
                                  account=ACCT_A, livemode=False))

    cu = get("/v1/customers/" + CUS)
    d = copy.deepcopy(cu["discount"])
    d.update({"id": "di_1S2m08B7WZ01zgkWdIsCoUnT", "customer": CUS, "start": T0 + 200})
    write("customer.discount.created", envelope("evt_1S2m08B7WZ01zgkWdIsCrEaT",
          "customer.discount.created", T0 + 200, d))
    d2 = copy.deepcopy(d)
    d2["end"] = T0 + 400
    write("customer.discount.deleted", envelope("evt_1S2m09B7WZ01zgkWdIsDeLeT",
          "customer.discount.deleted", T0 + 400, d2))

    cu.update({"created": T0 - 600, "discount": None, "email": "jenny.rosen@example.com"})
    write("customer.deleted", envelope("evt_1S2m10B7WZ01zgkWcUsDeLeT", "customer.deleted", T0 + 500, cu))

    ii = get("/v1/invoiceitems/ii_1S2m11B7WZ01zgkWiNvItEm1")
    ii.update({"date": T0 + 250, "customer": CUS})
    write("invoiceitem.created", envelope("evt_1S2m11B7WZ01zgkWiNvCrEaT", "invoiceitem.created", T0 + 250, ii))

    clk = get("/v1/test_helpers/test_clocks/clock_1S2m12B7WZ01zgkWtEsTcLoC")
    clk.update({"created": T0, "deletes_after": T0 + 30 * 86400, "frozen_time": T0 + 7200})
    write("test_helpers.test_clock.ready", envelope("evt_1S2m12B7WZ01zgkWcLoCkRdY",
          "test_helpers.test_clock.ready", T0 + 7200, clk))


main()
