#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// run.slurm on a real single-node Slurm (`scripts/slurm-local.sh`, which
/// the test command starts): sbatch, squeue, scontrol and scancel for real.
@Suite(.serialized, .tags(.large, .slurm), Component.slurm.needed) struct SlurmTests {
    final class Setup: @unchecked Sendable {
        let dir: TemporaryDirectory
        let env: [String: String]

        static let heavy = """
            kind: Heavy
            resources: remote
            inputs: { a: TextRef }
            outputs: { out: TextRef }
            params: { text: { type: string, default: x }, sleep: { type: number, default: 0 }, code: { type: integer, default: 0 } }
            run:
              slurm:
                command: [sh, -c, 'echo "slurm job arg=[$1]"; echo "progress: 0.5"; sleep "$3"; cat "$0" > "$2"; printf "%s" "$1" >> "$2"; exit "$4"',
                          "{inputs.a}", "{params.text}", "{outputs.out}", "{params.sleep}", "{params.code}"]
                time: "TIME"
                cpus: 1
            """
        static let local = """
            kind: Local
            inputs: { a: TextRef? }
            outputs: { out: TextRef }
            params: { text: { type: string, default: x } }
            run:
              command: [sh, -c, 'printf "%s|" "$1" > "$0"; [ -n "$2" ] && cat "$2" >> "$0"; true', "{outputs.out}", "{params.text}", "{inputs.a}"]
            """

        init(heavyParams: String = "text: x", time: String = "2m") throws {
            dir = try TemporaryDirectory()
            try dir.write("wf/tools/Heavy.yaml", Self.heavy.replacingOccurrences(of: "TIME", with: time))
            try dir.write("wf/tools/Local.yaml", Self.local)
            try dir.write("wf/t.yaml", """
                schema: app.workflow/v2
                name: Slurm middle
                nodes:
                  - { id: first, kind: Local, params: { text: one } }
                  - { id: heavy, kind: Heavy, params: { \(heavyParams) } }
                  - { id: last, kind: Local, params: { text: three }, inputs: { a: TextRef } }
                edges: [first.out -> heavy.a, heavy.out -> last.a]
                """)
            try dir.write("config.yaml", "slurm: { pollInterval: 0.3s }\n")
            env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": dir.path + "/config.yaml", "XDG_STATE_HOME": dir.path + "/state"]
        }

        @discardableResult
        func flowdir(_ args: [String], environment: [String: String] = [:]) throws -> CommandResult {
            try CommandRunner.flowdir(args, in: dir.path, environment: env.merging(environment) { $1 })
        }

        func new(_ name: String = "inst") throws -> String {
            #expect(try flowdir(["new", "wf/t.yaml", name]).status == 0)
            return dir.path + "/" + name
        }

        func start(_ inst: String, environment: [String: String] = [:]) throws -> Process {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            p.arguments = ["run", inst]
            p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }.merging(environment) { $1 }
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            return p
        }

        func stateFile(_ inst: String, _ node: String) -> String {
            (try? String(contentsOfFile: inst + "/nodes/\(node)/state.yaml", encoding: .utf8)) ?? ""
        }

        func waitFor(_ what: String, timeout: Double = 60, _ condition: () -> Bool) throws {
            if Eventually.blockingUntil(timeout: .seconds(timeout), every: .milliseconds(50), condition) { return }
            throw GitCLI.Failure(description: "timed out waiting for \(what)")
        }

        func jobID(_ inst: String) -> String? {
            stateFile(inst, "heavy").split(separator: "\n").first { $0.hasPrefix("job: ") }
                .map { $0.dropFirst(5).trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
        }
    }

    static func squeue(_ id: String) throws -> String {
        try CommandRunner.run("/usr/bin/squeue", ["--noheader", "--jobs=" + id, "--format=%T"]).stdout
    }

    @Test func aWorkflowsMiddleStepRunsOnSlurmWithItsParamsAsTheyAre() async throws {
        try await offPool {
            let param = #"a b; rm -rf / $(echo no) `x` 'q' "d" * ~"#
            let s = try Setup(heavyParams: "text: '\(param.replacingOccurrences(of: "'", with: "''"))'")
            let inst = try s.new()
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(try String(contentsOfFile: inst + "/nodes/last/out/out.txt", encoding: .utf8) == "three|one|" + param)
            let log = try String(contentsOfFile: inst + "/nodes/heavy/runs/1/log.txt", encoding: .utf8)
            #expect(log.contains("slurm job arg=[\(param)]"), "\(log)")
            let history = try GitCLI.run(["log", "--reverse", "--format=%B"], in: inst)
            let seen = history.split(separator: "\n").filter { $0.hasPrefix("Flowdir-Transition: heavy ") }.map { String($0.split(separator: " ")[2]) }
            #expect(seen.suffix(3) == ["ready→queuedRemote", "queuedRemote→runningRemote", "runningRemote→succeeded"], "\(seen)")
            #expect(s.jobID(inst) != nil)
        }
    }

    /// The shipped example: the seed's flow with its stylize step a batch job.
    @Test func theSlurmExampleRunsEndToEnd() async throws {
        try await offPool {
            let s = try Setup()
            let inst = s.dir.path + "/my-photo"
            #expect(try s.flowdir(["new", RepositoryPaths.root + "/examples/stylize-slurm.yaml", inst]).status == 0)
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(s.stateFile(inst, "stylize1").contains("job: "))
            let png = try Data(contentsOf: URL(fileURLWithPath: inst + "/nodes/stylize1/out/image.png"))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
            let jpeg = try Data(contentsOf: URL(fileURLWithPath: inst + "/nodes/compress1/out/file.jpg"))
            #expect(jpeg.starts(with: [0xFF, 0xD8]))
            let log = try String(contentsOfFile: inst + "/nodes/stylize1/runs/1/log.txt", encoding: .utf8)
            #expect(log.contains("convert "), "\(log)")
        }
    }

    @Test func aJobThatExits3FailsWithItsCode() async throws {
        try await offPool {
            let s = try Setup(heavyParams: "code: 3")
            let inst = try s.new()
            #expect(try s.flowdir(["run", inst]).status == 1)
            let state = s.stateFile(inst, "heavy")
            #expect(state.contains("state: failed") && state.contains("exited with code 3"), "\(state)")
        }
    }

    @Test func aJobPastItsTimeFailsWithSlurmsReason() async throws {
        try await offPool {
            // Slurm's smallest limit is a minute (it checks it about every 30 s).
            let s = try Setup(heavyParams: "sleep: 300", time: "1")
            let inst = try s.new()
            #expect(try s.flowdir(["run", inst]).status == 1)
            let state = s.stateFile(inst, "heavy")
            #expect(state.contains("ran past its time limit (Slurm: TIMEOUT)"), "\(state)")
        }
    }

    /// slurmctld stopped for 30 s while two jobs run, one of which ends in
    /// the meantime: nothing fails, the card says "Reconnecting…", and both
    /// finish once the controller is back.
    @Test func aControllerStoppedFor30sFailsNothing() async throws {
        try await offPool {
            let s = try Setup(heavyParams: "sleep: 40")
            let short = try Setup(heavyParams: "sleep: 5")
            let long = try s.new(), quick = try short.new()
            let p = try s.start(long), q = try short.start(quick)
            defer { p.terminate(); q.terminate() }
            try s.waitFor("both jobs to run") {
                s.stateFile(long, "heavy").contains("state: runningRemote") && short.stateFile(quick, "heavy").contains("state: runningRemote")
            }
            let pidFile = "/run/slurm-local/slurmctld.pid"
            let pid = try #require(Int32(String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(kill(pid, SIGTERM) == 0)
            // Whatever happens below, the controller comes back for the other tests.
            defer {
                if (try? CommandRunner.run("/usr/bin/scontrol", ["ping"]).stdout.contains("UP")) != true {
                    _ = try? CommandRunner.run("/usr/sbin/slurmctld", [])
                }
                try? s.waitFor("the controller to answer", timeout: 30) {
                    (try? CommandRunner.run("/usr/bin/scontrol", ["ping"]).stdout.contains("UP")) == true
                }
            }
            try s.waitFor("the controller to stop", timeout: 30) {
                (try? CommandRunner.run("/usr/bin/scontrol", ["ping"]).stdout.contains("UP")) == false
            }
            let stopped = Date()
            try s.waitFor("\"Reconnecting\" on the card", timeout: 25) { s.stateFile(long, "heavy").contains("Reconnecting") }
            usleep(useconds_t(max(0, 30 - Date().timeIntervalSince(stopped)) * 1_000_000))
            for (setup, inst) in [(s, long), (short, quick)] {
                let state = setup.stateFile(inst, "heavy")
                #expect(state.contains("state: runningRemote"), "\(state)")
            }
            _ = try CommandRunner.run("/usr/sbin/slurmctld", [])
            try s.waitFor("both runs to finish", timeout: 240) { !p.isRunning && !q.isRunning }
            #expect(p.terminationStatus == 0 && q.terminationStatus == 0)
            for (setup, inst) in [(s, long), (short, quick)] {
                #expect(setup.stateFile(inst, "last").contains("state: succeeded"), "\(setup.stateFile(inst, "heavy"))")
                #expect(!setup.stateFile(inst, "heavy").contains("Reconnecting"))
            }
        }
    }

    /// Two clones on the file system the cluster shares (as two login
    /// nodes have): A sends the job and dies; once A's lease lapses, B
    /// follows the job by its id in A's work folder, where it writes, and
    /// takes its outputs and log. sbatch is called once.
    @Test func afterALapseTheOtherMachineFollowsTheSlurmJobWhereItRuns() async throws {
        try await offPool {
            let s = try Setup(heavyParams: "sleep: 6")
            try s.dir.write("config.yaml", "slurm: { pollInterval: 0.3s }\nsync: { lease: 5s }\n")
            try s.dir.write("bin/sbatch", "#!/bin/sh\necho sent >> \(s.dir.path)/sbatch.calls\nexec /usr/bin/sbatch \"$@\"\n")
            chmod(s.dir.path + "/bin/sbatch", 0o755)
            let path = s.dir.path + "/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
            let a = try s.new("a")
            let hub = s.dir.path + "/hub.git"
            _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", hub])
            _ = try GitCLI.run(["remote", "add", "origin", hub], in: a)
            let p = try s.start(a, environment: ["FLOWDIR_HOST": "laptop", "PATH": path])
            try s.waitFor("the job id in A's state") { s.jobID(a) != nil }
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            let id = try #require(s.jobID(a))
            #expect(try s.flowdir(["sync", a], environment: ["FLOWDIR_HOST": "laptop"]).status == 0)
            let b = s.dir.path + "/b"
            #expect(try s.flowdir(["clone", hub, b], environment: ["FLOWDIR_HOST": "gpu-box"]).status == 0)
            // B's wall a second past the end of A's lease, as B's copy carries it: the lapse is the clock's.
            let yaml = try String(contentsOfFile: b + "/instance.yaml", encoding: .utf8)
            let until = try #require(yaml.firstMatch(of: /until: "?([^"\s]+)/).flatMap { Timestamp(iso8601: String($0.1)) }, "\(yaml)")
            let ran = try s.flowdir(["run", b], environment: ["FLOWDIR_HOST": "gpu-box", "PATH": path, "FLOWDIR_NOW": (until + 1).iso8601])
            #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
            #expect(s.jobID(b) == id)
            #expect(try String(contentsOfFile: b + "/nodes/heavy/out/out.txt", encoding: .utf8) == "one|x")
            #expect(try String(contentsOfFile: b + "/nodes/last/out/out.txt", encoding: .utf8) == "three|one|x")
            let log = try String(contentsOfFile: b + "/nodes/heavy/runs/1/log.txt", encoding: .utf8)
            #expect(log.contains("slurm job arg=[x]"), "\(log)")
            let calls = try String(contentsOfFile: s.dir.path + "/sbatch.calls", encoding: .utf8)
            #expect(calls == "sent\n", "sbatch called \(calls.split(separator: "\n").count) times")
            #expect(try GitCLI.run(["status", "--porcelain"], in: b).isEmpty)
        }
    }

    @Test func scancelOutsideFlowdirCancelsTheNodeAndFlowdirCancelEmptiesTheQueue() async throws {
        try await offPool {
            let s = try Setup(heavyParams: "sleep: 120")
            // Outside flowdir.
            let inst = try s.new()
            let p = try s.start(inst)
            try s.waitFor("the job to run") { s.stateFile(inst, "heavy").contains("state: runningRemote") }
            let id = try #require(s.jobID(inst))
            _ = try CommandRunner.run("/usr/bin/scancel", [id])
            p.waitUntilExit()
            let state = s.stateFile(inst, "heavy")
            #expect(state.contains("state: cancelled") && state.contains("Cancelled in Slurm, outside flowdir"), "\(state)")

            // flowdir cancel: the job leaves the queue, and nothing of it runs on.
            let other = try s.new("other")
            let second = try s.start(other)
            try s.waitFor("the second job to run") { s.stateFile(other, "heavy").contains("state: runningRemote") }
            let id2 = try #require(s.jobID(other))
            let c = try s.flowdir(["cancel", other, "heavy"])
            #expect(c.status == 0, "\(c.stderr)")
            second.waitUntilExit()
            #expect(s.stateFile(other, "heavy").contains("state: cancelled"))
            try s.waitFor("the job to leave the queue", timeout: 30) { ((try? Self.squeue(id2)) ?? "x").trimmingCharacters(in: .whitespacesAndNewlines).isEmpty }
            // slurmstepd ends the job's processes a moment after the queue forgets it.
            var left = ""
            try? s.waitFor("the job's processes to end", timeout: 15) {
                left = (try? CommandRunner.run("/usr/bin/pgrep", ["-f", "sleep 120"]).stdout) ?? ""
                return left.isEmpty
            }
            #expect(left.isEmpty, "still running: \(left)")
        }
    }
}
