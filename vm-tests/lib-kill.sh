# vm-tests/lib-kill.sh (sourced): kill a run for real, as a power cut or the
# OOM killer would. $PID is the run (gpuboot); its tree is gpuboot and every
# descendant, chrooted ones too. Used by image-kill.sh and image-packages.sh.

# tree ROOT: ROOT and every descendant's pid
tree() {
	ps -e -o pid= -o ppid= | awk -v root="$1" '
	{ parent[$1] = $2 } END {
		keep[root] = 1; changed = 1
		while (changed) { changed = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 } }
		for (p in keep) print p }'
}
proc_named() { # a process of the tree by its name
	for p in $(tree "$PID"); do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$1" ] && return 0; done
	return 1
}
proc_cmd() { # a process of the tree whose command line matches
	for p in $(tree "$PID"); do { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q -- "$1" && return 0; done
	return 1
}
# kill_tree: stop the tree (no process escapes while it is read), then
# SIGKILL every one; wait for the run
kill_tree() {
	pids=$(tree "$PID")
	# shellcheck disable=SC2086
	kill -STOP $pids 2>/dev/null
	pids=$(tree "$PID")
	# shellcheck disable=SC2086
	kill -KILL $pids 2>/dev/null
	wait "$PID" 2>/dev/null
}
# kill_on TRIGGER [POLL]: while the run lives, evaluate TRIGGER (a shell
# test naming what runs) every POLL seconds (default 0.01); when it holds,
# kill the tree. Sets fired (1, or "" when the run ended first) and
# kill_rc (what wait said of the run).
kill_on() {
	fired=
	while kill -0 "$PID" 2>/dev/null; do
		if eval "$1"; then
			fired=1
			kill_tree
			break
		fi
		sleep "${2:-0.01}"
	done
	wait "$PID" 2>/dev/null
	kill_rc=$?
}
