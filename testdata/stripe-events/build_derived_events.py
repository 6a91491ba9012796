#!/usr/bin/env python3
"""Build invoice.payment_failed and customer.subscription.trial_will_end
from invoice.paid.json and customer.subscription.updated.json here (copied
unchanged from the shared fixtures, built by their build_events.py from
Stripe's published resource fixtures, API version 2025-08-27.basil),
changing only what the event's state needs, as build_events.py does.

Usage: python3 build_derived_events.py   (writes the two files next to it)
"""
import copy, json, os

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1756742400
DAY = 24 * 3600


def read(name):
    with open(os.path.join(HERE, name + ".json"), encoding="utf-8") as f:
        return json.load(f)


def write(name, ev):
    with open(os.path.join(HERE, name + ".json"), "w", encoding="utf-8") as f:
        json.dump(ev, f, indent=2, ensure_ascii=False)
        f.write("\n")


def main():
    # The subscription's invoice at its first failed attempt: open, nothing
    # paid, Stripe's next retry 3 days on.
    ev = copy.deepcopy(read("invoice.paid"))
    ev["id"], ev["type"] = "evt_1S2kq5B7WZ01zgkWfA1lEdPf", "invoice.payment_failed"
    inv = ev["data"]["object"]
    inv.update({"status": "open", "amount_paid": 0, "amount_remaining": inv["amount_due"],
                "attempt_count": 1, "attempted": True, "next_payment_attempt": ev["created"] + 3 * DAY})
    inv["status_transitions"]["paid_at"] = None
    write("invoice.payment_failed", ev)

    # The subscription in a 14-day trial from T0, three days before its end;
    # Stripe sends it of itself, with no request.
    ev = copy.deepcopy(read("customer.subscription.updated"))
    trial_end = T0 + 14 * DAY
    ev["id"], ev["type"], ev["created"] = "evt_1S3wTeB7WZ01zgkWtRiAlEnD", "customer.subscription.trial_will_end", trial_end - 3 * DAY
    ev["request"] = {"id": None, "idempotency_key": None}
    del ev["data"]["previous_attributes"]
    sub = ev["data"]["object"]
    sub.update({"status": "trialing", "trial_start": T0, "trial_end": trial_end})
    item = sub["items"]["data"][0]
    item["current_period_start"], item["current_period_end"] = T0, trial_end
    write("customer.subscription.trial_will_end", ev)


if __name__ == "__main__":
    main()
