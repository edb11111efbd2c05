#!/bin/sh
# A service's log: steady request lines, a flood of one warning, a real
# Python traceback in the middle, then recovery and a failing shutdown.
i=1
while [ $i -le 1500 ]; do
  echo "2026-03-01T10:$(( i / 60 % 60 )):$(( i % 60 )) INFO  [http] GET /api/items/$i 200 in $(( i % 37 + 3 ))ms"
  i=$((i + 1))
done
i=1
while [ $i -le 600 ]; do
  echo "2026-03-01T11:00:$(( i % 60 )) WARN  [pool] connection $i slow to return (held ${i}ms)"
  i=$((i + 1))
done
python3 "$(dirname "$0")/worker.py" 2>&1
i=1
while [ $i -le 1500 ]; do
  echo "2026-03-01T12:$(( i / 60 % 60 )):$(( i % 60 )) INFO  [http] POST /api/orders/$i 201 in $(( i % 41 + 5 ))ms"
  i=$((i + 1))
done
echo "2026-03-01T13:00:00 ERROR [main] shutdown: 3 requests still in flight, forcing exit"
echo "service exited with status 1"
