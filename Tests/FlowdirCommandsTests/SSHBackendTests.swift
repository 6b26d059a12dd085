#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// run.ssh (docs/ssh-backend.md) on a real OpenSSH server on loopback
/// (`scripts/sshd-local.sh`, through `SSHServer`): the host is this
/// machine, reached only through ssh, its runs in a folder of the test.
@Suite(.serialized, .tags(.large, .sshd), Component.sshd.needed) struct SSHBackendTests {
    final class Setup: @unchecked Sendable {
        let dir: TemporaryDirectory
        let env: [String: String]
        var sshd: SSHServer?
        let sshDir: String
        /// Where the host keeps its runs.
        var hostRuns: String { dir.path + "/hostruns" }
        /// One line a start of the tool on the host.
        var count: String { dir.path + "/count" }
        /// The tool waits for this file when the node's `gate` names it.
        var gate: String { dir.path + "/gate" }

        static let stylize = """
            kind: Stylize
            resources: remote
            inputs: { image: TextRef }
            outputs: { image: TextRef }
            params: { steps: { type: integer, default: 3 }, gate: { type: string, default: "" }, count: { type: string, default: "" } }
            run:
              ssh:
                host: flowdir-test
                dir: HOSTRUNS
                command: [sh, "{tool.dir}/stylize.sh", "{inputs.image}", "{outputs.image}", "{params.steps}", "{params.gate}", "{params.count}"]
            """
        /// The tool's script, beside its file: copied to the host with it.
        static let script = """
            #!/bin/sh
            in=$1; out=$2; steps=$3; gate=$4; count=$5
            [ -n "$count" ] && echo "started $$" >> "$count"
            echo "stylize: $steps steps on $(pwd)"
            echo "progress: 0.5"
            if [ -n "$gate" ]; then while [ ! -e "$gate" ]; do sleep 0.1; done; fi
            printf 'stylized(%s):' "$steps" > "$out"; cat "$in" >> "$out"
            echo "stylize: done"
            """
        static let local = """
            kind: Local
            inputs: { a: TextRef? }
            outputs: { out: TextRef }
            params: { text: { type: string, default: x } }
            run:
              command: [sh, -c, 'printf "%s|" "$1" > "$0"; [ -n "$2" ] && cat "$2" >> "$0"; true', "{outputs.out}", "{params.text}", "{inputs.a}"]
            """

        init(styleParams: String = "steps: 3") throws {
            // The host's init reaps no orphans, as in a whole test run once a
            // job-server test made this process a subreaper (a job's zombies stay).
            _ = Subreaper.become
            dir = try TemporaryDirectory()
            sshDir = dir.path + "/ssh"
            sshd = try SSHServer(dir: sshDir)
            try dir.write("wf/tools/Stylize.yaml", Self.stylize.replacingOccurrences(of: "HOSTRUNS", with: dir.path + "/hostruns"))
            try dir.write("wf/tools/stylize.sh", Self.script)
            try dir.write("wf/tools/Local.yaml", Self.local)
            try dir.write("wf/t.yaml", """
                schema: app.workflow/v2
                name: ssh middle
                nodes:
                  - { id: first, kind: Local, params: { text: one } }
                  - { id: style, kind: Stylize, params: { \(styleParams) } }
                  - { id: last, kind: Local, params: { text: three }, inputs: { a: TextRef } }
                edges: [first.out -> style.image, style.image -> last.a]
                """)
            try dir.write("config.yaml", "ssh: { pollInterval: 0.3s, command: \"ssh -F \(sshDir)/ssh_config\" }\n")
            env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": dir.path + "/config.yaml", "XDG_STATE_HOME": dir.path + "/state"]
        }

        deinit { stopHost() }

        /// The sshd on the same port again (its keys and config are kept in `sshDir`).
        func startHost() throws {
            let r = try CommandRunner.run("/bin/bash", [RepositoryPaths.root + "/scripts/sshd-local.sh", "start", sshDir, String(port)])
            guard r.status == 0 else { throw GitCLI.Failure(description: "sshd-local.sh failed: \(r.stderr)") }
        }

        /// This test's sshd ends, and with it every connection it holds
        /// (each one's own sshd, a child of it): a dropped connection.
        func stopHost() {
            guard let text = try? String(contentsOfFile: sshDir + "/sshd.pid", encoding: .utf8),
                  let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)) else { return }
            // Its whole tree: a session's own process (a grandchild, under
            // privilege separation) outlives its monitor and would keep a
            // shared connection up. A job, detached, is no longer in it.
            // Stopped first, then each process found in it, until no new one
            // turns up: a stopped process forks no connection between the
            // listing and the kill (one that did kept the shared connection up).
            // Each is listed only once it has really stopped (the signal is taken later than kill returns:
            // under load a process went on to fork a connection that kept the shared one up).
            kill(pid, SIGSTOP)
            ProcessProbe.waitStopped(pid)
            var tree: Set<Int32> = []
            while true {
                let found = Set(ProcessProbe.descendants(of: pid)).subtracting(tree)
                guard !found.isEmpty else { break }
                for child in found { kill(child, SIGSTOP) }
                for child in found { ProcessProbe.waitStopped(child) }
                tree.formUnion(found)
            }
            kill(pid, SIGKILL)
            for child in tree { kill(child, SIGKILL) }
            unlink(sshDir + "/sshd.pid")
            sshd = nil
        }

        var port: Int {
            let config = (try? String(contentsOfFile: sshDir + "/sshd_config", encoding: .utf8)) ?? ""
            return config.split(separator: "\n").first { $0.hasPrefix("Port ") }.flatMap { Int($0.dropFirst(5)) } ?? 0
        }

        /// Processes whose command line names `text`.
        static func processes(naming text: String) -> [Int32] {
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name -> Int32? in
                guard let pid = Int32(name), let cmd = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(name)/cmdline")) else { return nil }
                return String(decoding: cmd, as: UTF8.self).contains(text) ? pid : nil
            }
        }

        /// Generous: it only guards a CI against a hang (the child is killed, the test fails).
        @discardableResult
        func flowdir(_ args: [String], timeout: Double = 600) throws -> CommandResult {
            try CommandRunner.flowdir(args, in: dir.path, environment: env, timeout: timeout)
        }

        func new(_ name: String = "inst") throws -> String {
            #expect(try flowdir(["new", "wf/t.yaml", name]).status == 0)
            return dir.path + "/" + name
        }

        func start(_ inst: String) throws -> Process {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            p.arguments = ["run", inst]
            p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            return p
        }

        func stateFile(_ inst: String, _ node: String) -> String {
            (try? String(contentsOfFile: inst + "/nodes/\(node)/state.yaml", encoding: .utf8)) ?? ""
        }

        /// Generous bounds: they only guard against a hang.
        func waitFor(_ what: String, timeout: Double = 90, _ condition: () -> Bool) throws {
            let deadline = Date().addingTimeInterval(timeout)
            while Date() < deadline {
                if condition() { return }
                usleep(50_000)
            }
            throw GitCLI.Failure(description: "timed out waiting for \(what)")
        }

        func starts() -> Int {
            ((try? String(contentsOfFile: count, encoding: .utf8)) ?? "").split(separator: "\n").count
        }

        func transitions(_ inst: String, _ node: String) throws -> [String] {
            try GitCLI.run(["log", "--reverse", "--format=%B"], in: inst).split(separator: "\n")
                .filter { $0.hasPrefix("Flowdir-Transition: \(node) ") }.map { String($0.split(separator: " ")[2]) }
        }
    }

    @Test func aStepRunsOnTheHostWithItsInputAndItsToolsScript() async throws {
        try await offPool {
            let s = try Setup()
            let inst = try s.new()
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(try String(contentsOfFile: inst + "/nodes/last/out/out.txt", encoding: .utf8) == "three|stylized(3):one|")
            let log = try String(contentsOfFile: inst + "/nodes/style/runs/1/log.txt", encoding: .utf8)
            #expect(log.contains("stylize: 3 steps on \(s.hostRuns)/") && log.contains("stylize: done"), "\(log)")
            #expect(try s.transitions(inst, "style").suffix(4) == ["ready→queuedRemote", "queuedRemote→runningRemote",
                                                                   "runningRemote→downloading", "downloading→succeeded"])
            let job = try #require(s.stateFile(inst, "style").split(separator: "\n").first { $0.hasPrefix("job: ") })
            let run = s.hostRuns + "/" + job.dropFirst(5).trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            #expect(try String(contentsOfFile: run + "/.flowdir-exit", encoding: .utf8) == "0\n")
            // Its copies of inputs and tool go once the outputs are fetched.
            #expect(!FileManager.default.fileExists(atPath: run + "/inputs") && !FileManager.default.fileExists(atPath: run + "/tool"))
            let record = try String(contentsOfFile: inst + "/nodes/style/runs/1/run.yaml", encoding: .utf8)
            #expect(record.contains("ssh:flowdir-test"), "\(record)")
        }
    }

    /// Every connection dropped (the host's sshd killed with them) while
    /// the job runs; sshd back: the job, which ran on, is collected once.
    @Test func aDroppedConnectionMidJobLosesNothing() async throws {
        try await offPool {
            let s = try Setup()
            let inst = try s.new()
            try s.dir.write("inst/nodes/style/params.yaml", "steps: 5\ngate: \(s.gate)\ncount: \(s.count)\n")
            let p = try s.start(inst)
            defer { if p.isRunning { p.terminate() } }
            try s.waitFor("the job to run on the host") { s.stateFile(inst, "style").contains("state: runningRemote") && s.starts() == 1 }
            s.stopHost()
            try s.waitFor("\"Reconnecting\" on the card") { s.stateFile(inst, "style").contains("Reconnecting") }
            #expect(s.starts() == 1 && !Setup.processes(naming: s.gate).isEmpty, "the job ended with the connection")
            try s.startHost()
            try s.dir.write("gate", "")
            try s.waitFor("the run to finish") { !p.isRunning }
            #expect(p.terminationStatus == 0)
            #expect(try String(contentsOfFile: inst + "/nodes/last/out/out.txt", encoding: .utf8) == "three|stylized(5):one|")
            #expect(s.starts() == 1)
            #expect(!s.stateFile(inst, "style").contains("Reconnecting"))
        }
    }

    /// `flowdir run` killed with -9 after the host started the job but
    /// before its id was recorded (the answer held back), then while it
    /// runs; each time run again: the job started once, its output
    /// collected once, in one run.
    @Test func killedRunsFollowTheJobAndNeverStartItTwice() async throws {
        try await offPool {
            let s = try Setup()
            let inst = try s.new()
            try s.dir.write("inst/nodes/style/params.yaml", "gate: \(s.gate)\ncount: \(s.count)\n")
            // The user's ssh, but the answer to a launch held back while `hold` is there.
            let hold = s.dir.path + "/hold"
            try s.dir.write("slowssh", """
                #!/bin/sh
                ssh -F \(s.sshDir)/ssh_config "$@"; r=$?
                case "$*" in *"tar -xf -"*) [ -e \(hold) ] && sleep 30 ;; esac
                exit $r
                """)
            chmod(s.dir.path + "/slowssh", 0o755)
            try s.dir.write("config.yaml", "ssh: { pollInterval: 0.3s, command: \"\(s.dir.path)/slowssh\" }\n")
            try s.dir.write("hold", "")
            var p = try s.start(inst)
            try s.waitFor("the host to start the job") {
                ((try? FileManager.default.contentsOfDirectory(atPath: s.hostRuns)) ?? []).contains {
                    FileManager.default.fileExists(atPath: s.hostRuns + "/" + $0 + "/.flowdir-launched")
                } && s.starts() == 1
            }
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            for pid in Setup.processes(naming: hold) { kill(pid, SIGKILL) }
            let state = s.stateFile(inst, "style")
            #expect(state.contains("submission: ") && !state.contains("job: "), "\(state)")
            unlink(hold)
            p = try s.start(inst)
            try s.waitFor("the job to be followed again") { s.stateFile(inst, "style").contains("state: runningRemote") }
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            try s.dir.write("gate", "")
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(s.starts() == 1, "started \(s.starts()) times")
            #expect(try String(contentsOfFile: inst + "/nodes/last/out/out.txt", encoding: .utf8) == "three|stylized(3):one|")
            let runs = try FileManager.default.contentsOfDirectory(atPath: inst + "/nodes/style/runs")
            #expect(runs == ["1"], "\(runs)")
            #expect(try s.transitions(inst, "style").filter { $0.hasSuffix("→succeeded") }.count == 1)
        }
    }

    /// `flowdir cancel`: the job's whole process group on the host ends.
    @Test func cancelLeavesNoProcessOnTheHost() async throws {
        try await offPool {
            let s = try Setup()
            let inst = try s.new()
            try s.dir.write("inst/nodes/style/params.yaml", "gate: \(s.gate)\ncount: \(s.count)\n")
            let p = try s.start(inst)
            defer { if p.isRunning { p.terminate() } }
            try s.waitFor("the job to run on the host") { s.starts() == 1 && !Setup.processes(naming: s.gate).isEmpty }
            // --wait: a hang guard; a loaded machine took longer than the default 15 s once.
            let c = try s.flowdir(["cancel", inst, "style", "--wait", "120"])
            #expect(c.status == 0, "\(c.stdout)\(c.stderr)")
            try s.waitFor("the node to be cancelled") { s.stateFile(inst, "style").contains("state: cancelled") }
            try s.waitFor("the job's processes to end", timeout: 30) { Setup.processes(naming: s.gate).isEmpty }
            #expect(Setup.processes(naming: s.gate).isEmpty)
            try s.waitFor("the run to end") { !p.isRunning }
        }
    }

    /// The host does not answer: `flowdir run` says the node is Offline
    /// (local nodes go on) and waits on no unreachable host; the next run,
    /// the host back, sends the job, once.
    @Test func aHostThatDoesNotAnswerIsOfflineAndTheNextRunSendsTheJob() async throws {
        try await offPool {
            let s = try Setup()
            let inst = try s.new()
            try s.dir.write("inst/nodes/style/params.yaml", "count: \(s.count)\n")
            s.stopHost()
            let first = try s.flowdir(["run", inst])
            #expect(first.status == 2, "\(first.stdout)\(first.stderr)")
            #expect(first.stdout.contains("blocked style — Offline: 'flowdir-test' unreachable since "), "\(first.stdout)")
            #expect(s.stateFile(inst, "first").contains("state: succeeded"))
            try s.startHost()
            let second = try s.flowdir(["run", inst])
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            #expect(try String(contentsOfFile: inst + "/nodes/last/out/out.txt", encoding: .utf8) == "three|stylized(3):one|")
            #expect(s.starts() == 1)
        }
    }

    /// Under `flowdir watch`, an Offline node resumes by itself once the host answers.
    @Test func underWatchAnOfflineNodeResumesWhenTheHostAnswers() async throws {
        try await offPool {
            let s = try Setup()
            let inst = try s.new("root/inst")
            try s.dir.write("root/inst/nodes/style/params.yaml", "count: \(s.count)\n")
            s.stopHost()
            let watch = Process()
            watch.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            watch.arguments = ["watch", s.dir.path + "/root"]
            watch.environment = ProcessInfo.processInfo.environment.merging(s.env) { $1 }
            watch.standardOutput = FileHandle.nullDevice
            watch.standardError = FileHandle.nullDevice
            try watch.run()
            defer {
                kill(watch.processIdentifier, SIGTERM)
                watch.waitUntilExit()
            }
            try s.waitFor("the node to be offline") { s.stateFile(inst, "style").contains("Offline: 'flowdir-test' unreachable since") }
            #expect(s.stateFile(inst, "first").contains("state: succeeded"))
            try s.startHost()
            try s.waitFor("the last node to succeed", timeout: 180) { s.stateFile(inst, "last").contains("state: succeeded") }
            #expect(try String(contentsOfFile: inst + "/nodes/last/out/out.txt", encoding: .utf8) == "three|stylized(3):one|")
            #expect(s.starts() == 1)
        }
    }

    /// The shipped example: the seed's flow with its stylize step on the
    /// host, run in the default dir (`~/.cache/flowdir/jobs` there).
    @Test func theSSHExampleRunsEndToEnd() async throws {
        try await offPool {
            let s = try Setup()
            let fm = FileManager.default
            try fm.createDirectory(atPath: s.dir.path + "/ex", withIntermediateDirectories: true)
            try fm.copyItem(atPath: RepositoryPaths.root + "/workflows/tools", toPath: s.dir.path + "/ex/tools")
            try fm.copyItem(atPath: RepositoryPaths.root + "/workflows/photo.png", toPath: s.dir.path + "/ex/photo.png")
            try fm.copyItem(atPath: RepositoryPaths.root + "/examples/stylize-ssh.yaml", toPath: s.dir.path + "/ex/stylize-ssh.yaml")
            let tool = s.dir.path + "/ex/tools/StylizeBox.yaml"
            try (try String(contentsOfFile: tool, encoding: .utf8)).replacingOccurrences(of: "host: gpu-box", with: "host: flowdir-test")
                .write(toFile: tool, atomically: true, encoding: .utf8)
            let inst = s.dir.path + "/my-photo"
            #expect(try s.flowdir(["new", s.dir.path + "/ex/stylize-ssh.yaml", inst]).status == 0)
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)\(s.stateFile(inst, "load1"))\(s.stateFile(inst, "stylize1"))")
            let job = try #require(s.stateFile(inst, "stylize1").split(separator: "\n").first { $0.hasPrefix("job: ") })
                .dropFirst(5).trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
            let home = ProcessInfo.processInfo.environment["HOME"] ?? "/root"
            let run = home + "/.cache/flowdir/jobs/" + job
            defer { try? fm.removeItem(atPath: run) }
            #expect(try String(contentsOfFile: run + "/.flowdir-exit", encoding: .utf8) == "0\n")
            let png = try Data(contentsOf: URL(fileURLWithPath: inst + "/nodes/stylize1/out/image.png"))
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
            let jpeg = try Data(contentsOf: URL(fileURLWithPath: inst + "/nodes/compress1/out/file.jpg"))
            #expect(jpeg.starts(with: [0xFF, 0xD8]))
            let log = try String(contentsOfFile: inst + "/nodes/stylize1/runs/1/log.txt", encoding: .utf8)
            #expect(log.contains("running: convert inputs/image.png"), "\(log)")
        }
    }
}
