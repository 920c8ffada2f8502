# Sourced, not executed: starts a throwaway PostgreSQL and Redis on free loopback ports, exports
# TEST_DATABASE_URL and TEST_REDIS_URL, and stops both when the calling shell exits.
# Needs Debian's postgresql and redis-server (see .ci/run); fails loudly when they are missing.

_pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$_pgbin" ] || [ ! -x "$_pgbin/initdb" ]; then
  echo "test/services.sh: PostgreSQL server binaries not found (apt-get install postgresql)" >&2
  return 1 2>/dev/null || exit 1
fi
if ! command -v redis-server >/dev/null; then
  echo "test/services.sh: redis-server not found (apt-get install redis-server)" >&2
  return 1 2>/dev/null || exit 1
fi

_free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
_svc_dir=$(mktemp -d /tmp/decisioning-test.XXXXXX)
chmod 755 "$_svc_dir"
_pg_port=$(_free_port)
_redis_port=$(_free_port)

# initdb refuses to run as root: run the server as the postgres user when we are root.
_as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$_svc_dir/pg" && { [ "$(id -u)" != 0 ] || chown postgres "$_svc_dir/pg"; }
_as_pg "$_pgbin/initdb" -D "$_svc_dir/pg" -A trust -U postgres >"$_svc_dir/initdb.log" 2>&1 \
  || { cat "$_svc_dir/initdb.log" >&2; return 1 2>/dev/null || exit 1; }
_as_pg "$_pgbin/pg_ctl" -D "$_svc_dir/pg" -w -l "$_svc_dir/pg/server.log" \
  -o "-p $_pg_port -k $_svc_dir/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400" \
  start >/dev/null || { cat "$_svc_dir/pg/server.log" >&2; return 1 2>/dev/null || exit 1; }
redis-server --port "$_redis_port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --pidfile "$_svc_dir/redis.pid" --dir "$_svc_dir" --logfile "$_svc_dir/redis.log" >/dev/null

_stop_test_services() {
  _as_pg "$_pgbin/pg_ctl" -D "$_svc_dir/pg" -m immediate stop >/dev/null 2>&1 || true
  [ -f "$_svc_dir/redis.pid" ] && kill "$(cat "$_svc_dir/redis.pid")" 2>/dev/null || true
  rm -rf "$_svc_dir"
}
trap _stop_test_services EXIT

for _i in $(seq 1 50); do redis-cli -p "$_redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$_pg_port/postgres"
export TEST_REDIS_URL="redis://127.0.0.1:$_redis_port"
echo "test services: postgres on $_pg_port, redis on $_redis_port"
