#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// What the hostile-input pass (Benchmarks/reliability/hostile.py) found,
/// each shown here on its own: a run's log committed as a link to the
/// secrets, FIFOs where a file is named, and `serve` options left unchecked.
@Suite(.tags(.large), Tier.notQuick) struct HostileInputTests {
    /// A collaborator commits a run's `log.txt` as a link to the victim's
    /// secrets.yaml: neither `flowdir logs` nor the pages' log route show it.
    @Test func aLogCommittedAsALinkToTheSecretsIsNeverShown() async throws {
        try await offPool {
            let s = try SymlinkTests.Setup()
            #expect(try s.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
            let inst = s.dir.path + "/root/inst"
            #expect(try s.flowdir(["run", inst]).status == 2)  // make and use ran; pick waits
            let log = inst + "/nodes/make/runs/1/log.txt"
            try? FileManager.default.removeItem(atPath: log)
            try FileManager.default.createSymbolicLink(atPath: log, withDestinationPath: s.secretsFile)
            _ = try s.git(["add", "-A"], in: inst)
            _ = try s.git(["commit", "--quiet", "-m", "a log"], in: inst)

            let logs = try s.flowdir(["logs", inst, "make"])
            #expect(logs.status != 0, "\(logs.stdout)")
            #expect(logs.stderr.contains("log.txt is a symbolic link"), "\(logs.stderr)")
            #expect(!(logs.stdout + logs.stderr).contains(SymlinkTests.secret))

            let env = ["XDG_CONFIG_HOME": s.victimConfig, "FLOWDIR_CONFIG": "", "FLOWDIR_SECRETS": "", "XDG_STATE_HOME": s.dir.path + "/state"]
            let server = try ServeCommandTests.ServeProcess([s.dir.path + "/root", "--no-watch"], in: s.dir.path, environment: env)
            let auth = ["-H", "Authorization: Bearer \(server.token)"]
            let list = try CommandRunner.run("/usr/bin/curl", ["-s"] + auth + [server.base + "/api/instances"]).stdout
            let json = try JSONSerialization.jsonObject(with: Data(list.utf8)) as? [String: Any]
            let id = try #require(((json?["rows"] as? [[String: Any]])?.first?["id"]) as? String)
            for path in ["/api/instances/\(id)/nodes/make/log", "/api/instances/\(id)/nodes/make/log?run=1", "/api/instances/\(id)"] {
                let answer = try CommandRunner.run("/usr/bin/curl", ["-s"] + auth + [server.base + path]).stdout
                #expect(!answer.contains(SymlinkTests.secret), "\(path): \(answer)")
            }
        }
    }

    /// A FIFO no one writes to, named where a file is read (a template to
    /// check, a secret file, a faults file): an error, never a hang. The
    /// time limit only stops a process that would hang for good.
    @Test func aFIFONamedAsAFileIsAnErrorNotAHang() throws {
        let dir = try TemporaryDirectory()
        #expect(mkfifo(dir.path + "/fifo", 0o600) == 0)
        let env = ["FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state"]
        let fd = RepositoryPaths.flowdirExecutable
        for args in [["check", dir.path + "/fifo"],
                     ["jobserver", "--port", "0", "--dir", dir.path + "/js", "--webhook-secret-file", dir.path + "/fifo"],
                     ["jobserver", "--port", "0", "--dir", dir.path + "/js", "--faults", dir.path + "/fifo"]] {
            let r = try CommandRunner.run("/usr/bin/timeout", ["120", fd] + args, in: dir.path, environment: env)
            #expect(r.status == 1, "\(args): \(r.status) \(r.stderr)")
            #expect(r.stdout.contains("empty") || r.stderr.contains("empty") || r.stderr.contains("faults"), "\(args): \(r.stdout)\(r.stderr)")
        }
    }

    /// `serve --no-watch` checks --grace as `serve` does, and --port is a port.
    @Test func serveRefusesAbsurdOptionsEvenWithoutTheWatcher() throws {
        let dir = try TemporaryDirectory()
        let env = ["FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state"]
        for extra in [["--grace", "nan"], ["--grace", "1e308"], ["--grace", "-1"], ["--port", "70000"], ["--port", "-1"]] {
            // Refused at once; `timeout` only stops a server that would serve.
            let r = try CommandRunner.run("/usr/bin/timeout", ["120", RepositoryPaths.flowdirExecutable, "serve", dir.path, "--no-watch"]
                                          + (extra[0] == "--port" ? [] : ["--port", "0"]) + extra, in: dir.path, environment: env)
            #expect(r.status == 64, "\(extra): \(r.status) \(r.stdout)")
            #expect(r.stderr.contains(extra[0]), "\(extra): \(r.stderr)")
        }
    }
}
