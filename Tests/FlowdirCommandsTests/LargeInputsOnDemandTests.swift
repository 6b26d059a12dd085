import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// Inputs fetched on demand (docs/storage.md): a node whose input's content
/// is not on this machine gets it from the sync remote before it starts, or
/// is blocked "Input not on this machine: origin unreachable" and resumes by
/// itself once it can.
@Suite(.tags(.large), Tier.notQuick) struct LargeInputsOnDemandTests {
    typealias Instance = LargeOutputsTests.Instance

    /// A makes `big` and syncs it to a hub; B clones: `big`'s output is a pointer there.
    static func machines(overSSH: Bool = false) throws -> (Instance, SSHServer?, hub: String, b: String) {
        let i = try Instance()
        let ssh = overSSH ? try SSHServer(dir: i.dir.path + "/ssh") : nil
        i.env.merge(ssh?.environment ?? [:]) { $1 }
        let hub = i.dir.path + "/hub.git"
        let url = overSSH ? "flowdir-test:" + hub : "file://" + hub
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", url])
        let ran = try i.flowdir(["run", i.inst, "--node", "big"])
        #expect(ran.status == 2, "\(ran.stdout)\(ran.stderr)")  // `use` waits: only `big` was to start
        let synced = try i.flowdir(["sync", i.inst])
        #expect(synced.status == 0, "\(synced.stdout)\(synced.stderr)")
        let b = i.dir.path + "/b"
        let cloned = try i.flowdir(["clone", url, "b"])
        #expect(cloned.status == 0, "\(cloned.stdout)\(cloned.stderr)")
        // What A made must be in B's clone; if not, say what A and the hub have.
        let pointer = try? String(contentsOfFile: b + "/nodes/big/out/out.bin", encoding: .utf8)
        #expect(pointer?.hasPrefix("version https://git-lfs.github.com/spec/v1") == true,
                "\(ran.stdout)\(ran.stderr)\n\(synced.stdout)\(synced.stderr)\nhub: \((try? GitCLI.run(["log", "--oneline", "-5", "main"], in: hub)) ?? "(none)")\nA: \((try? i.git(["log", "--oneline", "-5"])) ?? "")")
        return (i, ssh, hub, b)
    }

    static func state(_ instance: String, _ node: String) -> String {
        (try? String(contentsOfFile: instance + "/nodes/\(node)/state.yaml", encoding: .utf8)) ?? ""
    }

    static func usedSum(_ b: String) -> String {
        ((try? String(contentsOfFile: b + "/nodes/use/out/out.txt", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(.tags(.sshd), Component.sshd.needed, arguments: [false, true]) func aNodeFetchesItsInputBeforeItStarts(overSSH: Bool) throws {
        let (i, ssh, _, b) = try Self.machines(overSSH: overSSH)
        defer { ssh?.stop() }
        let made = try i.sha256(i.outputFile)
        let run = try i.flowdir(["run", b])
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        // The tool was given the content, not the pointer; the working file is the content too.
        #expect(Self.usedSum(b) == made)
        #expect(try i.sha256(b + "/nodes/big/out/out.bin") == made)
        #expect(FileManager.default.fileExists(atPath: b + "/.git/lfs/objects/\(made.prefix(2))/\(made.dropFirst(2).prefix(2))/\(made)"))
        #expect(try CommandRunner.run("/usr/bin/git", ["status", "--porcelain"], in: b, environment: i.env).stdout.isEmpty)
    }

    /// The hub cannot be reached: `run` leaves the node blocked and says so
    /// (exit 2, waiting); the next run, with the hub back, fetches and runs it.
    @Test func aNodeWhoseInputCannotBeFetchedWaitsForIt() throws {
        let (i, _, hub, b) = try Self.machines()
        // B takes the lease while the hub answers; a run may start jobs on it after.
        let took = try i.flowdir(["lease", "take", b])
        #expect(took.status == 0, "\(took.stdout)\(took.stderr)")
        try FileManager.default.moveItem(atPath: hub, toPath: hub + ".away")
        let blocked = try i.flowdir(["run", b])
        #expect(blocked.status == 2, "\(blocked.stdout)\(blocked.stderr)")
        #expect(Self.state(b, "use").contains("Input not on this machine: origin unreachable"), "\(Self.state(b, "use"))\n\(blocked.stdout)\(blocked.stderr)")
        let shown = try i.flowdir(["show", b])
        #expect(shown.stdout.contains("Input not on this machine: origin unreachable"), "\(shown.stdout)")
        #expect(try CommandRunner.run("/usr/bin/git", ["status", "--porcelain"], in: b, environment: i.env).stdout.isEmpty)

        try FileManager.default.moveItem(atPath: hub + ".away", toPath: hub)
        let resumed = try i.flowdir(["run", b])
        #expect(resumed.status == 0, "\(resumed.stdout)\(resumed.stderr)")
        #expect(Self.usedSum(b) == (try i.sha256(i.outputFile)))
    }

    /// Under `watch` the node resumes by itself once the hub answers again.
    @Test func underWatchItResumesByItselfOnceTheHubAnswers() async throws {
        try await offPool {
            let (i, _, hub, b) = try Self.machines()
            #expect(try i.flowdir(["lease", "take", b]).status == 0)
            try FileManager.default.moveItem(atPath: hub, toPath: hub + ".away")
            let log = i.dir.path + "/watch.log"
            #expect(FileManager.default.createFile(atPath: log, contents: nil))
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            let watch = Process()
            watch.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            watch.arguments = ["watch", b]
            watch.environment = ProcessInfo.processInfo.environment.merging(i.env) { $1 }
            watch.standardOutput = handle
            watch.standardError = handle
            try watch.run()
            defer { watch.terminate(); watch.waitUntilExit() }
            // Generous bounds: they only guard against a hang.
            Eventually.blockingUntil(every: .milliseconds(100)) { Self.state(b, "use").contains("Input not on this machine") }
            #expect(Self.state(b, "use").contains("Input not on this machine: origin unreachable"),
                    "\(Self.state(b, "use"))\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            try FileManager.default.moveItem(atPath: hub + ".away", toPath: hub)
            Eventually.blockingUntil(timeout: .seconds(120), every: .milliseconds(200)) { Self.state(b, "use").contains("state: succeeded") }
            #expect(Self.state(b, "use").contains("state: succeeded"),
                    "\(Self.state(b, "use"))\n\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
            #expect(Self.usedSum(b) == (try i.sha256(i.outputFile)))
        }
    }

    /// With no remote to ask, the node fails at once and says how to get the content.
    @Test func withNoRemoteItFailsAndSaysHowToGetIt() throws {
        let (i, _, _, b) = try Self.machines()
        _ = try CommandRunner.run("/usr/bin/git", ["remote", "remove", "origin"], in: b, environment: i.env)
        let run = try i.flowdir(["run", b])
        #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
        #expect(Self.state(b, "use").contains("is not on this machine"), "\(Self.state(b, "use"))")
        #expect(Self.state(b, "use").contains("flowdir storage get"), "\(Self.state(b, "use"))")
    }

    /// `storage get <instance>/<node> --run N`: that run's content only, to the store.
    @Test func getFetchesOneRunsContent() throws {
        let (i, _, _, _) = try Self.machines()
        let first = try i.sha256(i.outputFile)
        #expect(try i.flowdir(["rerun", i.inst, "big"]).status == 0)
        #expect(try i.flowdir(["sync", i.inst]).status == 0)
        let c = i.dir.path + "/c"
        #expect(try i.flowdir(["clone", "file://" + i.dir.path + "/hub.git", "c"]).status == 0)
        let noNode = try i.flowdir(["storage", "get", c, "--run", "1"])
        #expect(noNode.status != 0 && noNode.stderr.contains("needs a node"), "\(noNode.stdout)\(noNode.stderr)")
        let got = try i.flowdir(["storage", "get", c + "/big", "--run", "1", "--json"])
        #expect(got.status == 0 && got.stdout.contains("\"fetched\" : 1"), "\(got.stdout)\(got.stderr)")
        #expect(FileManager.default.fileExists(atPath: c + "/.git/lfs/objects/\(first.prefix(2))/\(first.dropFirst(2).prefix(2))/\(first)"))
        // The current output (run 2) is still only a pointer here.
        #expect(try String(contentsOfFile: c + "/nodes/big/out/out.bin", encoding: .utf8).hasPrefix("version https://git-lfs.github.com/spec/v1"))
        let none = try i.flowdir(["storage", "get", c + "/big", "--run", "9"])
        #expect(none.status != 0 && none.stderr.contains("has no large file"), "\(none.stdout)\(none.stderr)")
    }
}
