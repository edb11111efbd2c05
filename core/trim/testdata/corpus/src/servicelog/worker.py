import json


def decode(raw):
    return json.loads(raw)


def handle(job):
    payload = decode(job["body"])
    return payload["amount"] * 2


print("2026-03-01T11:10:00 INFO  [worker] picked job 7781")
handle({"body": '{"amount": 3,}'})
