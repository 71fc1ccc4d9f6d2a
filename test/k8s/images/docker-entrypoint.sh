#!/bin/sh
# The official redis and valkey images' entry point, as they behave: a first argument that is a
# flag or a .conf file runs the server with it; started as root, the server drops to the image's
# uid 999 after taking over the working directory (setpriv from util-linux stands in for gosu);
# umask 0077 unless one was set. Pods that give a command (the operator's) never run this.
set -e

server=redis-server
if command -v valkey-server >/dev/null 2>&1; then server=valkey-server; fi

if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- "$server" "$@"
fi

case "$1" in
redis-server | valkey-server)
	if [ "$(id -u)" = '0' ]; then
		find . \! -user 999 -exec chown 999 '{}' +
		exec setpriv --reuid=999 --regid=999 --init-groups "$0" "$@"
	fi
	;;
esac

if [ "$(umask)" = '0022' ]; then
	umask 0077
fi

exec "$@"
