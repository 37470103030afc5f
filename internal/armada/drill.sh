# The restore drill (drill.go). It restores the newest completed base
# backup of SERVER_NAME in DESTINATION with Barman Cloud into a scratch
# PostgreSQL under SCRATCH, recovers it to the backup's consistent point
# with the archived WAL, checks each of DATABASES (database:job-table)
# against the running database (the libpq PG* environment): Armada's
# migration table (the database_version sequence) at the same migration,
# and the job table not empty when the running one is not. It prints what
# it found and exits 0, or prints why it failed and exits 1. The scratch
# data lives on a volume that ends with the pod.
set -eu
scratch=${SCRATCH:-/scratch}
data=$scratch/data
run=$scratch/run
log=$scratch/postgres.log
fail() {
	echo "restore drill FAILED: $*"
	exit 1
}
cloud() {
	tool=$1
	shift
	if [ -n "${ENDPOINT_URL:-}" ]; then
		"$tool" --endpoint-url "$ENDPOINT_URL" "$@"
	else
		"$tool" "$@"
	fi
}
scratchsql() { PGSSLMODE=disable psql -X -q -h "$run" -p 5432 -U postgres -d "$1" -tAc "$2"; }
runningsql() { psql -X -q -d "$1" -tAc "$2"; }

rm -rf "$data" "$run"
mkdir -p "$run"
list=$(cloud barman-cloud-backup-list --format json "$DESTINATION" "$SERVER_NAME") ||
	fail "cannot list the backups of $SERVER_NAME in $DESTINATION"
backup=$(printf '%s' "$list" | python3 -c '
import json, sys
done = [b["backup_id"] for b in json.load(sys.stdin)["backups_list"] if b.get("status") == "DONE"]
print(max(done) if done else "")
') || fail "cannot read the backup list of $SERVER_NAME"
[ -n "$backup" ] || fail "no completed backup of $SERVER_NAME in $DESTINATION"
echo "restoring backup $backup of $SERVER_NAME from $DESTINATION"
cloud barman-cloud-restore "$DESTINATION" "$SERVER_NAME" "$backup" "$data" ||
	fail "cannot restore backup $backup of $SERVER_NAME"
chmod 700 "$data"
rm -f "$data/postmaster.pid"
: >"$data/postgresql.auto.conf"
wal="barman-cloud-wal-restore"
if [ -n "${ENDPOINT_URL:-}" ]; then
	wal="$wal --endpoint-url $ENDPOINT_URL"
fi
# Only this configuration: the backup's own files name the source
# cluster's certificates and settings. Without hot standby, PostgreSQL
# accepts connections only once it has recovered and left recovery.
cat >"$scratch/drill.conf" <<EOF
data_directory = '$data'
hba_file = '$scratch/pg_hba.conf'
ident_file = '$scratch/pg_ident.conf'
listen_addresses = ''
unix_socket_directories = '$run'
port = 5432
archive_mode = off
hot_standby = off
restore_command = '$wal $DESTINATION $SERVER_NAME %f %p'
recovery_target = 'immediate'
recovery_target_action = 'promote'
EOF
echo "local all all trust" >"$scratch/pg_hba.conf"
: >"$scratch/pg_ident.conf"
touch "$data/recovery.signal"
trap 'pg_ctl -D "$data" -m immediate stop >/dev/null 2>&1 || true' EXIT
# pg_ctl returns once PostgreSQL runs (in recovery, without hot standby
# it accepts no connection yet), or fails if it stops first. It accepts
# connections once it has recovered and left recovery, and stops if
# recovery fails. The Job's deadline bounds the wait.
if ! pg_ctl -D "$data" -o "-c config_file=$scratch/drill.conf" -l "$log" -w -t 86400 start >/dev/null; then
	tail -n 20 "$log" || true
	fail "backup $backup of $SERVER_NAME did not recover (PostgreSQL's log above)"
fi
until [ "$(scratchsql postgres 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]; do
	if ! pg_ctl -D "$data" status >/dev/null; then
		tail -n 20 "$log" || true
		fail "backup $backup of $SERVER_NAME did not recover (PostgreSQL's log above)"
	fi
	sleep 1
done
summary=""
for entry in $DATABASES; do
	db=${entry%%:*}
	table=${entry#*:}
	restored=$(scratchsql "$db" 'SELECT last_value FROM database_version') ||
		fail "$db: the restored database has no Armada migration table (database_version)"
	running=$(runningsql "$db" 'SELECT last_value FROM database_version') ||
		fail "$db: cannot read the running database's migration table"
	[ "$restored" = "$running" ] ||
		fail "$db: the restored database is at migration $restored, the running one at $running"
	rows=$(scratchsql "$db" "SELECT count(*) FROM $table") || fail "$db: cannot count the restored $table rows"
	live=$(runningsql "$db" "SELECT count(*) FROM $table") || fail "$db: cannot count the running $table rows"
	if [ "$live" -gt 0 ] && [ "$rows" -eq 0 ]; then
		fail "$db: the restored $table table is empty, the running one has $live rows"
	fi
	summary="$summary; $db at migration $restored, $rows $table rows (running: $live)"
done
echo "restore drill passed: backup $backup of $SERVER_NAME$summary"
