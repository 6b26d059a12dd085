import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// `flowdir run` and friends, end to end with the binary.
@Suite(.tags(.large), Tier.notQuick) struct RunCommandTests {
    let env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": ""]

    /// Six nodes of a small Python tool, in a diamond-ish shape.
    func makeInstance(_ dir: TemporaryDirectory) throws -> String {
        try dir.write("wf/tools/Echo.yaml", """
            kind: Echo
            inputs: { a: TextRef?, b: TextRef? }
            outputs: { out: TextRef }
            params: { text: { type: string, default: x }, sleep: { type: number, default: 0.05 } }
            run:
              command: [python3, -c, "import sys, time; t, s, o, *i = sys.argv[1:]; time.sleep(float(s)); open(o, 'w').write(t + ''.join(open(p).read() for p in i if p))",
                        "{params.text}", "{params.sleep}", "{outputs.out}", "{inputs.a}", "{inputs.b}"]
            """)
        try dir.write("wf/six.yaml", """
            schema: app.workflow/v2
            name: Six
            nodes:
              - { id: root, kind: Echo, params: { text: R } }
              - { id: l1, kind: Echo, params: { text: L }, inputs: { a: TextRef } }
              - { id: r1, kind: Echo, params: { text: M }, inputs: { a: TextRef } }
              - { id: l2, kind: Echo, params: { text: N }, inputs: { a: TextRef } }
              - { id: r2, kind: Echo, params: { text: O }, inputs: { a: TextRef } }
              - { id: end, kind: Echo, params: { text: E }, inputs: { a: TextRef, b: TextRef } }
            edges: [root.out -> l1.a, root.out -> r1.a, l1.out -> l2.a, r1.out -> r2.a, l2.out -> end.a, r2.out -> end.b]
            """)
        let r = try CommandRunner.flowdir(["new", "wf/six.yaml", "inst"], in: dir.path, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        return dir.path + "/inst"
    }

    /// `inst`: one node, `node`, whose tool runs `sh -c script` with its output path as `$0`.
    func oneNodeInstance(_ dir: TemporaryDirectory, node: String, script: String) throws {
        let quoted = script.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        try oneNodeInstance(dir, node: node, command: "[sh, -c, \"\(quoted)\", \"{outputs.out}\"]")
    }

    /// `command`: the tool's `run.command`, in YAML.
    func oneNodeInstance(_ dir: TemporaryDirectory, node: String, command: String) throws {
        try dir.write("wf/tools/Tool.yaml", """
            kind: Tool
            outputs: { out: TextRef }
            run:
              command: \(command)
            """)
        try dir.write("wf/one.yaml", "schema: app.workflow/v2\nname: One\nnodes:\n  - { id: \(node), kind: Tool }\n")
        let r = try CommandRunner.flowdir(["new", "wf/one.yaml", "inst"], in: dir.path, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
    }

    @Test func runFinishesAndSaysHow() async throws {
        try await offPool { try self.runAndCheck() }
    }

    func runAndCheck() throws {
        let dir = try TemporaryDirectory()
        let inst = try makeInstance(dir)
        let r = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "6 succeeded\n")
        #expect(try String(contentsOfFile: inst + "/nodes/end/out/out.txt", encoding: .utf8) == "ENLROMR")
        try GitCLI.expectHealthy(inst)
        let logs = try CommandRunner.flowdir(["logs", "inst", "end"], in: dir.path, environment: env)
        #expect(logs.status == 0)
        let show = try CommandRunner.flowdir(["show", "inst"], in: dir.path, environment: env)
        #expect(show.stdout.contains("done · 6/6 steps"))
        // Nothing left to do: a second run is a quick no-op, with no new commit.
        let before = try GitCLI.run(["rev-list", "--count", "HEAD"], in: inst)
        #expect(try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: env).status == 0)
        #expect(try GitCLI.run(["rev-list", "--count", "HEAD"], in: inst) == before)
    }

    /// Started with its stdin closed (as some daemons start programs), so
    /// that descriptor 0 goes to the first file flowdir opens: a job still
    /// gets /dev/null as its stdin, and its output still reaches its log.
    @Test func aRunStartedWithStdinClosedGivesJobsDevNull() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try self.oneNodeInstance(dir, node: "look", script: "readlink /proc/self/fd/0 > \"$0\"; cat; echo looked")
            let r = try CommandRunner.run("/bin/sh", ["-c", "exec 0<&-; exec \"$0\" run inst", RepositoryPaths.flowdirExecutable],
                                          in: dir.path, environment: self.env)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(try String(contentsOfFile: dir.path + "/inst/nodes/look/out/out.txt", encoding: .utf8) == "/dev/null\n")
            #expect(try String(contentsOfFile: dir.path + "/inst/nodes/look/runs/1/log.txt", encoding: .utf8) == "looked\n")
        }
    }

    /// The executable's spawning threads keep their signals blocked (see
    /// `ChildWatch.dropsChildSignals`): its jobs still start with none
    /// blocked and none ignored, as from a shell.
    @Test func jobsOfTheExecutableStartWithNoSignalBlockedOrIgnored() async throws {
        try await offPool {
            let signals = try self.signalsOfAJob(RepositoryPaths.flowdirExecutable, ["run", "inst"])
            #expect(signals == ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"])
        }
    }

    /// Signals ignored by whoever started flowdir (`nohup`, a shell's
    /// background job, here a `trap ""`) are not ignored by its jobs: a
    /// realtime signal and SIGWINCH too, which only the look at startup finds.
    @Test func signalsIgnoredWhenFlowdirStartsAreNotIgnoredByItsJobs() async throws {
        try await offPool {
            let signals = try self.signalsOfAJob("/bin/sh", ["-c", "trap '' HUP USR1 WINCH 40; exec \"$0\" run inst",
                                                             RepositoryPaths.flowdirExecutable])
            #expect(signals == ["SigBlk:\t0000000000000000", "SigIgn:\t0000000000000000"])
        }
    }

    /// A job's blocked and ignored signals (the SigBlk and SigIgn lines of
    /// the status it copies; not through sh, which clears its own mask as
    /// it starts), `flowdir run inst` started by `executable` with `arguments`.
    func signalsOfAJob(_ executable: String, _ arguments: [String]) throws -> [Substring] {
        let dir = try TemporaryDirectory()
        try oneNodeInstance(dir, node: "look", command: "[cp, /proc/self/status, \"{outputs.out}\"]")
        let r = try CommandRunner.run(executable, arguments, in: dir.path, environment: env)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let status = try String(contentsOfFile: dir.path + "/inst/nodes/look/out/out.txt", encoding: .utf8)
        return status.split(separator: "\n").filter { $0.hasPrefix("SigBlk") || $0.hasPrefix("SigIgn") }
    }

    /// An output a person removed since it was made: it is flowdir's
    /// record, in git, so it is put back as committed (with a warning) and
    /// its consumer runs on it, rather than failing later for want of it.
    @Test func anOutputRemovedFromTheFolderIsPutBackForItsConsumer() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try dir.write("wf/tools/Echo.yaml", """
                kind: Echo
                inputs: { a: TextRef? }
                outputs: { out: TextRef }
                run:
                  command: [sh, -c, "echo hi > \\"$0\\"", "{outputs.out}"]
                """)
            try dir.write("wf/two.yaml", "schema: app.workflow/v2\nname: Two\nnodes:\n  - { id: a, kind: Echo }\n  - { id: b, kind: Echo }\nedges:\n  - a.out -> b.a\n")
            #expect(try CommandRunner.flowdir(["new", "wf/two.yaml", "inst"], in: dir.path, environment: self.env).status == 0)
            #expect(try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: self.env).stdout == "2 succeeded\n")
            try FileManager.default.removeItem(atPath: dir.path + "/inst/nodes/a/out/out.txt")
            let r = try CommandRunner.flowdir(["rerun", "inst", "b"], in: dir.path, environment: self.env)
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains("put back nodes/a/out/out.txt"), "\(r.stderr)")
            #expect(try String(contentsOfFile: dir.path + "/inst/nodes/a/out/out.txt", encoding: .utf8) == "hi\n")
            try GitCLI.expectHealthy(dir.path + "/inst")
        }
    }

    /// A node's state.yaml spoiled by hand: put back as the last commit has
    /// it, with a warning that names the file; the run goes on from there.
    @Test func aSpoiledStateFileIsPutBackAndNamed() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try self.oneNodeInstance(dir, node: "look", script: "echo hi > \"$0\"")
            let file = dir.path + "/inst/nodes/look/state.yaml"
            let text = try String(contentsOfFile: file, encoding: .utf8)
            try text.replacingOccurrences(of: "state: ready", with: "state: bogus").write(toFile: file, atomically: true, encoding: .utf8)
            let r = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: self.env)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stderr.contains("put back nodes/look/state.yaml"), "\(r.stderr)")
            #expect(InstanceProbe.state(dir.path + "/inst", "look") == "succeeded")
            try GitCLI.expectHealthy(dir.path + "/inst")
        }
    }

    @Test func killNineAtFiftyRandomMomentsThenRunAgain() async throws {
        try await offPool { try self.killNineRounds() }
    }

    func killNineRounds() throws {
        let dir = try TemporaryDirectory()
        let inst = try makeInstance(dir)
        _ = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: env)
        var rng = SystemRandomNumberGenerator()
        for round in 0..<50 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            p.arguments = ["rerun", "inst", "root", "--downstream"]
            p.currentDirectoryURL = URL(fileURLWithPath: dir.path)
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            usleep(UInt32.random(in: 0...400_000, using: &rng))
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let r = try CommandRunner.flowdir(["run", "inst"], in: dir.path, environment: env)
            #expect(r.status == 0, "round \(round): \(r.stdout) \(r.stderr)")
            #expect(r.stdout == "6 succeeded\n", "round \(round)")
            try GitCLI.expectHealthy(inst, allowDangling: true)
        }
        // Every run that was interrupted says so in its record; none is left "running".
        let states = try InstanceReader().read(inst).states
        #expect(states.values.allSatisfy { $0.state == .succeeded })
    }

    @Test func cancelFromAnotherTerminalWhileRunIsGoing() async throws {
        try await offPool { try self.cancelFromAnotherTerminal() }
    }

    func cancelFromAnotherTerminal() throws {
        let dir = try TemporaryDirectory()
        try oneNodeInstance(dir, node: "long", script: "echo working; sleep 60 & wait; echo never > \"$0\"")
        let out = dir.path + "/run-out.txt"
        #expect(FileManager.default.createFile(atPath: out, contents: nil))
        let run = Process()
        run.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
        run.arguments = ["run", "inst"]
        run.currentDirectoryURL = URL(fileURLWithPath: dir.path)
        run.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        run.standardError = FileHandle.nullDevice
        try run.run()
        // Follow its log from here until it has started working.
        let work = try #require(Files.realPath(dir.path)) + "/inst/.flowdir/work/long.1"
        Eventually.blockingUntil { ProcessTable.jobGroups(runDirectories: [work])[work] != nil }
        Eventually.blockingUntil { ((try? CommandRunner.flowdir(["logs", "inst", "long"], in: dir.path, environment: env))?.stdout ?? "") == "working\n" }
        let pid = try #require(ProcessTable.jobGroups(runDirectories: [work])[work]?.first, "the tool never started")
        // flowdir's spawning thread leaves SIGCHLD unblocked, so a job's end wakes no other thread (see ChildWatch).
        var spawnerMask: UInt64?
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(run.processIdentifier)/task")) ?? [] {
            let base = "/proc/\(run.processIdentifier)/task/\(task)/"
            guard (try? String(contentsOfFile: base + "comm", encoding: .utf8))?.hasPrefix("flowdir-spawn") == true else { continue }
            spawnerMask = (try String(contentsOfFile: base + "status", encoding: .utf8)).split(separator: "\n")
                .first { $0.hasPrefix("SigBlk:") }.flatMap { UInt64($0.dropFirst(7).trimmingCharacters(in: .whitespaces), radix: 16) }
        }
        let mask = try #require(spawnerMask, "no flowdir-spawn thread")
        #expect(mask & (1 << (UInt64(SIGCHLD) - 1)) == 0, "flowdir-spawn SigBlk \(String(mask, radix: 16))")
        let logs = try CommandRunner.flowdir(["logs", "inst", "long"], in: dir.path, environment: env)
        #expect(logs.stdout == "working\n")
        // Another terminal: the lock is held by `run`, so the request is handed over.
        let cancel = try CommandRunner.flowdir(["cancel", "inst", "long"], in: dir.path, environment: env)
        #expect(cancel.status == 0, "\(cancel.stderr)")
        #expect(cancel.stdout.hasPrefix("'long' is now cancelled: Cancelled by "))
        run.waitUntilExit()
        #expect(run.terminationStatus == 1)
        #expect(try String(contentsOfFile: out, encoding: .utf8).hasPrefix("1 cancelled"))
        // Nothing of the job's process group is left.
        #expect(ProcessTable.members(ofGroup: pid).isEmpty)
        try GitCLI.expectHealthy(dir.path + "/inst")
        // `logs -f` on a finished run prints it and returns.
        let follow = try CommandRunner.flowdir(["logs", "-f", "inst", "long"], in: dir.path, environment: env)
        #expect(follow.stdout == "working\n")
    }

    /// Ctrl-C (SIGINT) or SIGTERM stops `flowdir run` as they stop make: the
    /// job running here is stopped at once and recorded as stopped by
    /// flowdir (ready again: the next run starts it again), nothing of it is
    /// left running, and the exit code is the shell's for that signal. It
    /// used to leave the job running on its own, its node `runningLocal`.
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalStopsTheRunAndItsJobAndRecordsIt(signal: Int32) async throws {
        try await offPool { try self.stopBySignal(signal) }
    }

    func stopBySignal(_ signal: Int32) throws {
        let dir = try TemporaryDirectory()
        try oneNodeInstance(dir, node: "long", script: "echo working; sleep 3600 & wait; echo never > \"$0\"")
        let out = dir.path + "/run-out.txt", err = dir.path + "/run-err.txt"
        #expect(FileManager.default.createFile(atPath: out, contents: nil) && FileManager.default.createFile(atPath: err, contents: nil))
        let run = Process()
        run.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
        run.arguments = ["run", "inst"]
        run.currentDirectoryURL = URL(fileURLWithPath: dir.path)
        run.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        run.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        run.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try run.run()
        let work = try #require(Files.realPath(dir.path)) + "/inst/.flowdir/work/long.1"
        Eventually.blockingUntil { ((try? CommandRunner.flowdir(["logs", "inst", "long"], in: dir.path, environment: env))?.stdout ?? "") == "working\n" }
        let pid = try #require(ProcessTable.jobGroups(runDirectories: [work])[work]?.first, "the tool never started")
        kill(run.processIdentifier, signal)
        run.waitUntilExit()
        #expect(run.terminationStatus == 128 + signal, "\((try? String(contentsOfFile: err, encoding: .utf8)) ?? "")")
        #expect(try String(contentsOfFile: err, encoding: .utf8).contains("flowdir: stopped: what ran here is recorded and runs again next time"))
        // Nothing of the job's process group is left.
        #expect(ProcessTable.members(ofGroup: pid).isEmpty)
        #expect(InstanceProbe.state(dir.path + "/inst", "long") == "ready")
        let last = try GitCLI.run(["log", "-1", "--format=%B"], in: dir.path + "/inst")
        #expect(last.contains("Flowdir-Transition: long runningLocal→failed") && last.contains("Flowdir-Transition: long failed→ready"), "\(last)")
        #expect(try String(contentsOfFile: dir.path + "/inst/nodes/long/runs/1/run.yaml", encoding: .utf8).contains("flowdir stopped while it ran"))
        try GitCLI.expectHealthy(dir.path + "/inst")
    }
}
