#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// Leases (docs/commands.md, "Sync between machines"): the machine that runs a
/// shared instance's jobs holds it; another shows the instance, takes answers,
/// syncs, and starts nothing until the lease lapses; then it takes over, and
/// follows the remote jobs the first one started without sending them again.
@Suite(.serialized, .tags(.large), Tier.notQuick) struct LeaseTests {
    @Test func aMachineWithoutTheLeaseStartsNothingThenTakesItOnceItLapses() async throws {
        try await offPool {
            let m = try SyncTests.Machines(overSSH: false)
            try m.dir.write("config/flowdir/config.yaml", "sync: { lease: 12s }\n")
            // The wall stands at `t` for every command until the lease's end, then
            // a second after it: the lapse is the clock's, never the machine's speed.
            let t = Timestamp(seconds: Date().timeIntervalSince1970.rounded(.down))
            let taken = try m.flowdir(["lease", "take", m.a], host: "laptop", now: t)
            #expect(taken.status == 0 && taken.stdout.contains("leased by this machine (laptop)"), "\(taken.stdout)\(taken.stderr)")
            _ = try m.flowdir(["sync", m.a], host: "laptop", now: t)
            _ = try m.flowdir(["sync", m.b], host: "gpu-box", now: t)
            // Answers on the other machine are taken; its node becomes ready but does not start.
            #expect(try m.flowdir(["answer", m.b + "/look", "--choice", "cool"], host: "gpu-box", now: t).status == 0)
            #expect(try m.flowdir(["answer", m.b + "/other", "--choice", "two"], host: "gpu-box", now: t).status == 0)
            let held = try m.flowdir(["run", m.b], host: "gpu-box", now: t + 11)
            #expect(held.status == 2 && held.stdout.contains("Leased by laptop until"), "\(held.stdout)\(held.stderr)")
            #expect(m.state(m.b, "make").contains("state: ready"))
            #expect(!FileManager.default.fileExists(atPath: m.b + "/nodes/make/runs"))
            let refused = try m.flowdir(["lease", "take", m.b], host: "gpu-box", now: t + 11)
            #expect(refused.status == 75 && refused.stderr.contains("laptop holds the lease"), "\(refused.stderr)")
            // Lapsed: the next run here takes it and runs the node.
            let ran = try m.flowdir(["run", m.b], host: "gpu-box", now: t + 13)
            #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
            #expect(try String(contentsOfFile: m.b + "/instance.yaml", encoding: .utf8).contains("host: gpu-box"))
            #expect(try m.flowdir(["lease", "show", m.b], host: "gpu-box", now: t + 13).stdout.contains("leased by this machine (gpu-box)"))
            _ = try m.flowdir(["sync", m.b], host: "gpu-box", now: t + 13)
            _ = try m.flowdir(["sync", m.a], host: "laptop", now: t + 13)
            #expect(m.state(m.a, "make").contains("state: succeeded"))
            try m.expectHealthyAndTogether()
        }
    }

    @Test func afterALapseTheOtherMachineFollowsTheRemoteJobAndNeverSendsItAgain() async throws {
        try await offPool {
            // Sent without waiting: the job's id is recorded while it runs (a held create names it only at its end).
            let s = try RemoteJobSetup(endpoint: "syncWait: 0s",
                                       nodes: "  - { id: r, kind: Remote, params: { text: remote, sleep: 3 } }\n  - { id: l, kind: Local, params: { text: local } }\n")
            try (String(contentsOfFile: s.dir.path + "/config.yaml", encoding: .utf8) + "sync: { lease: 15s }\n")
                .write(toFile: s.dir.path + "/config.yaml", atomically: true, encoding: .utf8)
            let a = try s.new("a")
            let hub = s.dir.path + "/hub.git"
            _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", hub])
            _ = try GitCLI.run(["remote", "add", "origin", hub], in: a)
            // Machine A sends the job, records its id, and dies.
            let p = try s.start(["run", a], environment: ["FLOWDIR_HOST": "laptop"])
            try s.waitFor("the job id in the state") {
                ((try? String(contentsOfFile: a + "/nodes/r/state.yaml", encoding: .utf8)) ?? "").contains("job: ")
            }
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            #expect(try s.flowdir(["sync", a], environment: ["FLOWDIR_HOST": "laptop"]).status == 0)
            let b = s.dir.path + "/root/b"
            #expect(try s.flowdir(["clone", hub, b], environment: ["FLOWDIR_HOST": "gpu-box"]).status == 0)
            // A's lease as B's copy carries it; B's wall stands a second before its
            // end, then a second after: the lapse is the clock's, not the machine's speed.
            let yaml = try String(contentsOfFile: b + "/instance.yaml", encoding: .utf8)
            let until = try #require(yaml.firstMatch(of: /until: "?([^"\s]+)/).flatMap { Timestamp(iso8601: String($0.1)) }, "\(yaml)")
            let held = try s.flowdir(["run", b], environment: ["FLOWDIR_HOST": "gpu-box", "FLOWDIR_NOW": (until + -1).iso8601])
            #expect(held.status == 2 && held.stdout.contains("Leased by laptop"), "\(held.stdout)\(held.stderr)")
            // Lapsed: B takes over, follows the job by its id, downloads its output.
            let ran = try s.flowdir(["run", b], environment: ["FLOWDIR_HOST": "gpu-box", "FLOWDIR_NOW": (until + 1).iso8601])
            #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
            #expect(try String(contentsOfFile: b + "/nodes/r/out/out.txt", encoding: .utf8) == "remote")
            #expect(s.predictions().count == 1, "\(s.predictions().count) predictions")
            #expect(s.requests("POST", "/v1/models/").count == 1)
        }
    }

    /// A folder copied whole to another machine (rsync, Syncthing), `.git`
    /// and all, carries the lease: the copy is valid and runs nothing twice.
    @Test func aFolderCopiedWithRsyncCarriesTheLeaseAndRunsNothingTwice() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try dir.write("wf/tools/Slow.yaml", """
                kind: Slow
                outputs: { out: TextRef }
                run:
                  command: [sh, -c, 'echo "$FLOWDIR_HOST" >> "$1"; sleep 6; echo done > "$0"', "{outputs.out}", "\(dir.path)/ran"]
                """)
            try dir.write("wf/t.yaml", "schema: app.workflow/v2\nname: Copied\nnodes:\n  - { id: slow, kind: Slow }\n")
            let env = ["XDG_CONFIG_HOME": dir.path + "/config", "XDG_STATE_HOME": dir.path + "/state"]
            #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "laptop/inst"], in: dir.path, environment: env).status == 0)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            p.arguments = ["run", dir.path + "/laptop/inst"]
            p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }.merging(["FLOWDIR_HOST": "laptop"]) { $1 }
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            // Once the start (and with it the lease) is committed: a copy made
            // halfway through writing a commit's files is no copy of the instance.
            let started = { ((try? GitCLI.run(["log", "--format=%B"], in: dir.path + "/laptop/inst")) ?? "").contains("→runningLocal") }
            Eventually.blockingUntil(timeout: .seconds(120), every: .milliseconds(20)) { !(!started()) }
            #expect(started(), "the laptop never started the node")
            // Copied mid-run, as a sync tool copies a folder.
            try FileManager.default.createDirectory(atPath: dir.path + "/gpu-box", withIntermediateDirectories: true)
            _ = try CommandRunner.run("/bin/cp", ["-a", dir.path + "/laptop/inst", dir.path + "/gpu-box/inst"])
            let copy = dir.path + "/gpu-box/inst"
            let there = try CommandRunner.flowdir(["run", copy], in: dir.path, environment: env.merging(["FLOWDIR_HOST": "gpu-box"]) { $1 })
            #expect(there.status == 2 && there.stdout.contains("Leased by laptop"), "\(there.stdout)\(there.stderr)")
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
            #expect(try String(contentsOfFile: dir.path + "/ran", encoding: .utf8) == "laptop\n")
            let fsck = try CommandRunner.run("/usr/bin/git", ["-C", copy, "fsck", "--strict"])
            #expect(fsck.status == 0, "\(fsck.stderr)")
        }
    }

    /// A run longer than the lease renews it and pushes the renewal at once:
    /// the other machine, looking after the first lease would have lapsed,
    /// still finds it held and starts nothing.
    @Test func aRunLongerThanTheLeaseKeepsItOnTheOtherMachine() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try dir.write("wf/tools/Slow.yaml", """
                kind: Slow
                outputs: { out: TextRef }
                run:
                  command: [sh, -c, 'echo "$FLOWDIR_HOST" >> "$1"; while [ ! -e "$2" ]; do sleep 0.05; done; echo done > "$0"', "{outputs.out}", "\(dir.path)/ran", "\(dir.path)/go"]
                """)
            try dir.write("wf/t.yaml", "schema: app.workflow/v2\nname: Long\nnodes:\n  - { id: slow, kind: Slow }\n")
            try dir.write("config/flowdir/config.yaml", "sync: { lease: 10s }\n")
            let env = ["XDG_CONFIG_HOME": dir.path + "/config", "XDG_STATE_HOME": dir.path + "/state"]
            func flowdir(_ args: [String], host: String, now: Timestamp? = nil) throws -> CommandResult {
                var e = env.merging(["FLOWDIR_HOST": host]) { $1 }
                if let now { e["FLOWDIR_NOW"] = now.iso8601 }
                return try CommandRunner.flowdir(args, in: dir.path, environment: e)
            }
            let a = dir.path + "/laptop/inst", b = dir.path + "/gpu-box/inst", hub = dir.path + "/hub.git"
            #expect(try flowdir(["new", "wf/t.yaml", a], host: "laptop").status == 0)
            _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", hub])
            _ = try GitCLI.run(["remote", "add", "origin", hub], in: a)
            #expect(try flowdir(["sync", a], host: "laptop").status == 0)
            try FileManager.default.createDirectory(atPath: dir.path + "/gpu-box", withIntermediateDirectories: true)
            #expect(try flowdir(["clone", hub, b], host: "gpu-box").status == 0)
            let p = Process()
            p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            p.arguments = ["run", a]
            p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }.merging(["FLOWDIR_HOST": "laptop"]) { $1 }
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            // The lease A took first, and then the one the hub holds: once the hub's
            // ends later, A's renewal (at half the lease) has been pushed.
            func untils(_ text: String) -> [Timestamp] {
                text.matches(of: /until: "?([^"\s]+)/).compactMap { Timestamp(iso8601: String($0.1)) }
            }
            func first() -> Timestamp? {
                untils((try? GitCLI.run(["log", "--reverse", "-p", "--", "instance.yaml"], in: a)) ?? "").first
            }
            func onHub() -> Timestamp? {
                guard let head = try? CommandRunner.run("/usr/bin/git", ["--git-dir", hub, "log", "--all", "-1", "--format=%H"]),
                      let text = try? CommandRunner.run("/usr/bin/git", ["--git-dir", hub, "show", head.stdout.trimmingCharacters(in: .whitespacesAndNewlines) + ":instance.yaml"])
                else { return nil }
                return untils(text.stdout).first
            }
            let renewed = Eventually.blockingUntil(timeout: .seconds(120), every: .milliseconds(50)) {
                guard let f = first(), let h = onHub() else { return false }
                return h > f
            }
            #expect(renewed, "the hub never got a renewed lease: first \(String(describing: first())), hub \(String(describing: onHub()))")
            // Past the first lease's end on the other machine's wall: only the renewal keeps it.
            let firstEnd = try #require(first())
            let there = try flowdir(["run", b], host: "gpu-box", now: firstEnd + 1)
            #expect(there.status == 2 && there.stdout.contains("Leased by laptop"), "\(there.stdout)\(there.stderr)")
            FileManager.default.createFile(atPath: dir.path + "/go", contents: nil)
            p.waitUntilExit()
            #expect(p.terminationStatus == 0)
            #expect(try String(contentsOfFile: dir.path + "/ran", encoding: .utf8) == "laptop\n")
        }
    }
}
