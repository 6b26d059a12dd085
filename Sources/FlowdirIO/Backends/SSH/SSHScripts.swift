import FlowdirCore

/// What flowdir runs on an ssh host, with the host's POSIX shell: nothing
/// of flowdir needs to be installed there. A run lives in its folder,
/// `<dir>/<run id>/`: the inputs it was sent, `.flowdir-launched` (made
/// once: what makes a second launch of the same run a no-op),
/// `.flowdir-pid` (its process group), `.flowdir-log`, `.flowdir-exit`.
enum SSHScripts {
    /// The run's folder, for the host's shell.
    static func folder(_ dir: String, _ run: String) -> String {
        SSHCommand.quotePath(dir) + "/" + Shell.quote(run)
    }

    /// The run id a submission key makes (`<instance id>-<node>-<run>`): the
    /// folder's name, so a run sent but not recorded is found again by it.
    static func runID(_ submissionKey: String) -> String {
        String(submissionKey.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
    }

    /// Unpacks the tar on stdin into the run folder and starts the argv
    /// there in a session of its own (`setsid`), its output to the log and
    /// its exit code kept, unless that run was started before: then it
    /// says so and starts nothing. Prints `launched` either way.
    static func launch(dir: String, run: String, argv: [String]) -> String {
        let words = argv.map(Shell.quote).joined(separator: " ")
        // The job's own shell keeps its exit code; a new session, so no hangup of the connection reaches it.
        let job = #"echo $$ > .flowdir-pid; "$@" > .flowdir-log 2>&1 < /dev/null; echo $? > .flowdir-exit.t; mv -f .flowdir-exit.t .flowdir-exit"#
        return """
            r=\(folder(dir, run)); mkdir -p "$r" && cd "$r" || { echo "cannot make the run folder $r" >&2; exit 3; }
            if [ -d .flowdir-launched ]; then cat > /dev/null; echo launched; exit 0; fi
            if command -v setsid > /dev/null 2>&1; then detach=setsid
            elif command -v perl > /dev/null 2>&1; then detach=perl-setsid
            else cat > /dev/null; echo "neither setsid nor perl is on this host's PATH: a job cannot be started apart from the connection" >&2; exit 3; fi
            tar -xf - || { echo "cannot unpack the run's inputs in $r" >&2; exit 3; }
            mkdir .flowdir-launched 2> /dev/null || { echo launched; exit 0; }
            # Runs that ended more than 7 days ago go.
            find "$r/.." -mindepth 2 -maxdepth 2 -name .flowdir-exit -mtime +7 2> /dev/null | while read -r e; do rm -rf "${e%/.flowdir-exit}"; done
            if [ "$detach" = setsid ]; then
              setsid sh -c '\(job)' flowdir-job \(words) > /dev/null 2>&1 < /dev/null &
            else
              perl -MPOSIX -e 'POSIX::setsid(); exec @ARGV' sh -c '\(job)' flowdir-job \(words) > /dev/null 2>&1 < /dev/null &
            fi
            echo launched
            """
    }

    /// For each `<run id> <log offset> <dir>` line on stdin, one record:
    /// `@@flowdir <run> <state> <code> <log size> <n>` and the next `n`
    /// bytes of its log; `@@flowdir-end` once all are said (a cut
    /// connection leaves it out). State: `none` (never launched),
    /// `starting`, `running`, `exit` (code: the exit code or `cancelled`),
    /// `lost` (its processes are gone and it left no exit code).
    /// The exit code is looked at first: a run has ended once its command
    /// has, even while its process group still has members — a child it
    /// left running, or its own shell unreaped (a host whose init does not
    /// reap orphans keeps that zombie, and `kill -0` of the group succeeds
    /// on it for ever: the run looked running, and a cancel never ended).
    /// Without an exit code, a group of zombies only is `lost` (`alive`).
    static func poll(chunk: Int) -> String {
        """
        \(alive)
        while read -r r off dir; do
          case "$dir" in "~") b=$HOME ;; "~/"*) b="$HOME/${dir#"~/"}" ;; *) b=$dir ;; esac
          d="$b/$r"; st=starting; code=0
          if [ ! -d "$d/.flowdir-launched" ]; then echo "@@flowdir $r none 0 0 0"; continue; fi
          if [ -f "$d/.flowdir-exit" ]; then st=exit; code=$(cat "$d/.flowdir-exit")
          elif [ -f "$d/.flowdir-pid" ] && alive "$(cat "$d/.flowdir-pid")"; then st=running
          elif [ -f "$d/.flowdir-exit" ]; then st=exit; code=$(cat "$d/.flowdir-exit")  # it ended since the first look
          elif [ -f "$d/.flowdir-pid" ]; then st=lost
          fi
          s=$(wc -c < "$d/.flowdir-log" 2> /dev/null || echo 0); s=$((s + 0))
          n=$((s - off)); [ "$n" -lt 0 ] && n=0; [ "$n" -gt \(chunk) ] && n=\(chunk)
          echo "@@flowdir $r $st ${code:-0} $s $n"
          if [ "$n" -gt 0 ]; then tail -c +$((off + 1)) "$d/.flowdir-log" | head -c "$n"; fi
        done
        echo "@@flowdir-end"
        """
    }

    /// Its outputs (each port's file, under whatever extension the tool
    /// gave it) as a tar on stdout; then its copies of inputs and tool go.
    static func fetch(dir: String, run: String, ports: [String]) -> String {
        let globs = ports.map { "\(Shell.quote($0)) \(Shell.quote($0)).*" }.joined(separator: " ")
        return """
            cd \(folder(dir, run)) || exit 3
            set --; for f in \(globs); do [ -f "$f" ] && set -- "$@" "$f"; done
            if [ $# -gt 0 ]; then tar -cf - -- "$@" || exit 3; fi
            rm -rf inputs tool
            """
    }

    /// Ends the run's process group (TERM, then KILL after `grace`
    /// seconds) and notes it as cancelled.
    static func cancel(dir: String, run: String, grace: Int) -> String {
        """
        \(alive)
        cd \(folder(dir, run)) 2> /dev/null || exit 0
        if [ -f .flowdir-pid ]; then
          p=$(cat .flowdir-pid); kill -TERM -"$p" 2> /dev/null; i=0
          while alive "$p" && [ $i -lt \(grace) ]; do sleep 1; i=$((i + 1)); done
          kill -KILL -"$p" 2> /dev/null
        fi
        [ -f .flowdir-exit ] || echo cancelled > .flowdir-exit
        echo cancelled
        """
    }

    /// `alive <group>`: whether a member of the process group is not a
    /// zombie. `kill -0` finds zombies too, and where nothing reaps them (a
    /// host whose init does not; a parent, or a child subreaper, that never
    /// waits) one stays for ever: a job killed without an exit code looked
    /// running for ever instead of lost, and a cancel waited out its grace.
    /// Without a `ps` that lists groups and states (BusyBox), `kill -0`.
    static let alive = """
        alive() {
          if pl=$(ps -A -o pgid= -o stat= 2> /dev/null); then printf '%s\\n' "$pl" | grep -Eq "^ *$1 +[^Z ]"
          else kill -0 -"$1" 2> /dev/null; fi
        }
        """

    /// One record of `poll`'s answer.
    struct Report: Equatable {
        var run: String
        var state: String
        var code: String
        var logSize: Int
        var log: [UInt8]
    }

    /// `poll`'s answer read; nil when it is cut short.
    static func parse(_ bytes: [UInt8]) -> [Report]? {
        var reports: [Report] = []
        var i = 0
        while i < bytes.count {
            guard let end = bytes[i...].firstIndex(of: 10) else { return nil }
            let line = String(decoding: bytes[i..<end], as: UTF8.self)
            i = end + 1
            if line == "@@flowdir-end" { return reports }
            let f = line.split(separator: " ").map(String.init)
            guard f.count == 6, f[0] == "@@flowdir", let size = Int(f[4]), let n = Int(f[5]), n >= 0, i + n <= bytes.count else { return nil }
            reports.append(Report(run: f[1], state: f[2], code: f[3], logSize: size, log: Array(bytes[i..<i + n])))
            i += n
        }
        return nil
    }

    /// Whether ssh's own failure (status 255) means the host could not be reached, not that it refused us.
    static func unreachable(_ status: Int32, _ errors: String) -> Bool {
        guard status == 255 else { return false }
        let e = errors.lowercased()
        return !(e.contains("permission denied") || e.contains("host key verification failed") || e.contains("bad configuration option"))
    }
}
