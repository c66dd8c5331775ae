#!/usr/bin/env bash
# A stock nginx (Debian's) on loopback for the tests that pull models from a real server.
#   scripts/nginx.sh start   serves build/nginx/www on 127.0.0.1:$EDGELLM_NGINX_PORT (default
#                            18089, or the next free port); prints "URL ROOT"
#   scripts/nginx.sh stop
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/build/nginx"
case "${1:-}" in
  start)
    command -v nginx >/dev/null || { echo "nginx.sh: nginx is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
    mkdir -p "$dir/www" "$dir/tmp"
    [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null && sleep 0.3 || true
    port="${EDGELLM_NGINX_PORT:-18089}"
    while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
    cat > "$dir/nginx.conf" <<CONF
daemon on;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 64; }
http {
  access_log $dir/access.log;
  client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
  uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
  types { application/json json; application/octet-stream gguf; }
  server {
    listen 127.0.0.1:$port;
    root $dir/www;
    # 30 MB/s per connection: a pull lasts long enough for the tests to kill it mid-way.
    location / { autoindex off; limit_rate 30m; }
    # For bench/download_bench.sh: unthrottled, and the same folder at 100 MB/s per connection.
    location /bench/ { autoindex off; }
    location /bench-100m/ { alias $dir/www/bench/; limit_rate 100m; }
  }
}
CONF
    nginx -c "$dir/nginx.conf" -p "$dir" 2>"$dir/start.log" || { cat "$dir/start.log" >&2; exit 1; }
    echo "http://127.0.0.1:$port $dir/www"
    ;;
  stop)
    [ -f "$dir/nginx.pid" ] && kill "$(cat "$dir/nginx.pid")" 2>/dev/null || true
    rm -f "$dir/nginx.pid"
    ;;
  *) echo "usage: scripts/nginx.sh start|stop" >&2; exit 2 ;;
esac
