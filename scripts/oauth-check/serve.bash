# Sourced by scripts/oauth-check/run and scripts/mcp-oauth-check/run (bash, set -euo
# pipefail, cwd = the repository): the real binary on a throwaway SQLite database, with
# an account and a user created by `admin create-user --password`, serving on a free
# port. Needs $bin (the binary) and $name (the caller's name, for messages). Sets
# $work (a temporary directory, removed on exit), $server (the server's pid), $base
# (its URL), $email and $password, and traps EXIT to stop the server (printing the
# tail of its log when the script fails).

work="$(mktemp -d)"
server=""
cleanup() {
  local status=$?
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  if [ "$status" -ne 0 ] && [ -f "$work/serve.log" ]; then
    echo "--- server log" >&2; tail -n 40 "$work/serve.log" >&2
  fi
  rm -rf "$work"
}
trap cleanup EXIT

export AGENTIC_DATABASE_URL="sqlite://$work/oauth.db?mode=rwc"
export AGENTIC_BIND=127.0.0.1:0
export AGENTIC_METRICS_BIND=127.0.0.1:0
export AGENTIC_LOG=warn
email="$name@example.com"
password="$name-$(date +%s%N)"
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
account="$("$bin" admin create-account --name "$name" | field accountId)"
"$bin" admin create-user --account "$account" --email "$email" --name "$name" \
  --role admin --password "$password" >/dev/null

"$bin" serve >"$work/serve.log" 2>&1 &
server=$!
base=""
for _ in $(seq 1 1800); do
  base="$(sed -n 's/.*listening on \(http:\/\/[^ ]*\).*/\1/p' "$work/serve.log" | head -n 1)"
  [ -n "$base" ] && break
  kill -0 "$server" 2>/dev/null || { echo "$name: the server exited" >&2; exit 1; }
  sleep 0.1
done
[ -n "$base" ] || { echo "$name: the server was not ready after 180 s" >&2; exit 1; }
echo "$name: agentic-api at $base"
