# Sourced, not executed: starts a throwaway PostgreSQL and Redis on free loopback ports, exports
# TEST_DATABASE_URL and TEST_REDIS_URL, and stops both when the calling shell exits.
# Needs PostgreSQL's server binaries and redis-server (Debian: apt-get install -y postgresql redis-server).
# PG_BIN_DIR names the directory of initdb and pg_ctl; by default the newest /usr/lib/postgresql/*/bin
# (Debian keeps them off PATH), else the initdb on PATH.
# Callers run under `set -euo pipefail`, so every command that may fail here is tested: a missing
# program or a server that does not come up ends with one line saying why, never a bare exit code.

_svc_say() { echo "test/services.sh: $*" >&2; }

_pgbin=${PG_BIN_DIR:-}
if [ -z "$_pgbin" ]; then
  _pgbin=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  if [ ! -x "$_pgbin/initdb" ] && _initdb=$(command -v initdb); then _pgbin=${_initdb%/initdb}; fi
fi
_missing="" _packages=""
if [ ! -x "$_pgbin/initdb" ] || [ ! -x "$_pgbin/pg_ctl" ]; then _missing="PostgreSQL (initdb, pg_ctl)" _packages=postgresql; fi
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  _missing="${_missing:+$_missing and }redis-server" _packages="${_packages:+$_packages }redis-server"
fi
if [ -n "$_missing" ]; then
  _svc_say "$_missing not found: install with \`apt-get install -y $_packages\` (Debian) or set TEST_DATABASE_URL and TEST_REDIS_URL"
  return 1 2>/dev/null || exit 1
fi
# initdb refuses to run as root: the server then runs as the postgres user (Debian's package makes it).
if [ "$(id -u)" = 0 ] && ! id -u postgres >/dev/null 2>&1; then
  _svc_say "running as root needs a postgres user to run PostgreSQL as (Debian: apt-get install -y postgresql creates it)"
  return 1 2>/dev/null || exit 1
fi
_as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

_free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
_svc_dir=$(mktemp -d "${TMPDIR:-/tmp}/decisioning-test.XXXXXX")
chmod 755 "$_svc_dir"
_pg_port=$(_free_port)
_redis_port=$(_free_port)

_stop_test_services() {
  [ ! -f "$_svc_dir/pg/postmaster.pid" ] || _as_pg "$_pgbin/pg_ctl" -D "$_svc_dir/pg" -m immediate stop >/dev/null 2>&1 || true
  [ ! -f "$_svc_dir/redis.pid" ] || kill "$(cat "$_svc_dir/redis.pid")" 2>/dev/null || true
  rm -rf "$_svc_dir"
}
trap _stop_test_services EXIT
# One line, the log it refers to, and everything started so far stopped.
_svc_give_up() {
  _svc_say "$1"
  [ ! -s "$2" ] || sed 's/^/  /' "$2" >&2
  _stop_test_services
}

# Redis first: it answers within milliseconds, so a broken one fails before PostgreSQL's initdb.
redis-server --port "$_redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --pidfile "$_svc_dir/redis.pid" --dir "$_svc_dir" --logfile "$_svc_dir/redis.log" >/dev/null 2>&1 \
  || { _svc_give_up "redis-server did not start" "$_svc_dir/redis.log"; return 1 2>/dev/null || exit 1; }
_tries=0
until [ "$(redis-cli -p "$_redis_port" ping 2>/dev/null)" = PONG ]; do
  _tries=$((_tries + 1))
  if [ "$_tries" -ge 50 ]; then
    _svc_give_up "redis-server did not answer on 127.0.0.1:$_redis_port within 5 s" "$_svc_dir/redis.log"
    return 1 2>/dev/null || exit 1
  fi
  sleep 0.1
done

mkdir -p "$_svc_dir/pg" && { [ "$(id -u)" != 0 ] || chown postgres "$_svc_dir/pg"; }
_as_pg "$_pgbin/initdb" -D "$_svc_dir/pg" -A trust -U postgres >"$_svc_dir/initdb.log" 2>&1 \
  || { _svc_give_up "PostgreSQL's initdb failed" "$_svc_dir/initdb.log"; return 1 2>/dev/null || exit 1; }
_as_pg "$_pgbin/pg_ctl" -D "$_svc_dir/pg" -w -t 30 -l "$_svc_dir/pg/server.log" \
  -o "-p $_pg_port -k $_svc_dir/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
  start >/dev/null 2>&1 \
  || { _svc_give_up "PostgreSQL did not start on 127.0.0.1:$_pg_port within 30 s" "$_svc_dir/pg/server.log"; return 1 2>/dev/null || exit 1; }

export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$_pg_port/postgres"
export TEST_REDIS_URL="redis://127.0.0.1:$_redis_port"
echo "test services: postgres on $_pg_port, redis on $_redis_port"
