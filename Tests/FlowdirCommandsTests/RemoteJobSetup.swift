#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// A job server with a tool model (`tools/Work`: logs, a progress line,
/// sleeps, writes its text), a config whose endpoint `gpu` points at it,
/// its token in secrets.yaml, and a template with a remote node `r` and a
/// local node `l`.
final class RemoteJobSetup: @unchecked Sendable {
    static let token = "tok-5f0c1d2e9a8b7c6d"
    static let webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    let dir: TemporaryDirectory
    var server: JobServerProcess!
    var env: [String: String]
    var watch: Process?
    var watchLog: String { dir.path + "/watch.log" }

    static let work = """
        kind: Work
        outputs: { out: TextRef }
        params: { text: { type: string, default: x }, sleep: { type: number, default: 0 } }
        run:
          command: [sh, -c, 'echo "working on $1"; echo "progress: 0.5"; sleep "$2"; printf "%s" "$1" > "$0"', "{outputs.out}", "{params.text}", "{params.sleep}"]
        """
    static let remote = """
        kind: Remote
        resources: remote
        outputs: { out: TextRef }
        params: { text: { type: string, default: x }, sleep: { type: number, default: 0 } }
        run:
          http:
            endpoint: gpu
            model: tools/Work
            input: { text: "{params.text}", sleep: "{params.sleep}" }
            outputs: { out: output }
        """
    static let local = """
        kind: Local
        outputs: { out: TextRef }
        params: { text: { type: string, default: x } }
        run:
          command: [sh, -c, 'printf "%s" "$1" > "$0"', "{outputs.out}", "{params.text}"]
        """

    /// - Parameters:
    ///   - endpoint: more YAML of the endpoint (`retryDelays: [...]`), one line.
    ///   - faults: the job server's faults file, if any.
    ///   - nodes: the template's nodes.
    ///   - models: more `--model NAME=tools/KIND` of the job server (its tools are `server/tools/`).
    init(endpoint: String = "", faults: String? = nil, port: Int = 0, webhookPort: Int? = nil,
         nodes: String = "  - { id: r, kind: Remote, params: { text: remote, sleep: 0.3 } }\n  - { id: l, kind: Local, params: { text: local } }\n",
         models: [String] = [], prepare: (TemporaryDirectory) throws -> Void = { _ in }) throws {
        dir = try TemporaryDirectory()
        try dir.write("server/tools/Work.yaml", Self.work)
        try prepare(dir)
        try dir.write("token", Self.token + "\n")
        // A token file others can read is refused (docs/security.md).
        chmod(dir.path + "/token", 0o600)
        try dir.write("webhook-secret", Self.webhookSecret + "\n")
        try dir.write("wf/tools/Remote.yaml", Self.remote)
        try dir.write("wf/tools/Local.yaml", Self.local)
        try dir.write("wf/t.yaml", "schema: app.workflow/v2\nname: Remote\nnodes:\n" + nodes)
        var args = ["--tools", dir.path + "/server/tools", "--token-file", dir.path + "/token", "--webhook-secret-file", dir.path + "/webhook-secret"]
        if let faults {
            try dir.write("faults.yaml", faults)
            args += ["--faults", dir.path + "/faults.yaml"]
        }
        args += models.flatMap { ["--model", $0] }
        serverArguments = args
        serverPort = port
        server = try JobServerProcess(dir: dir.path + "/jobserver", arguments: args + (port == 0 ? [] : ["--port", String(port)]), port: port)
        // The defaults, unless `endpoint` gives the same key.
        let given = Set(endpoint.split(separator: ",").compactMap { $0.split(separator: ":").first?.trimmingCharacters(in: .whitespaces) })
        var ep = "url: \(server.url)"
        for (key, value) in [("pollInterval", "0.2s"), ("firstBackoff", "0.2s"), ("maxBackoff", "1s")] where !given.contains(key) {
            ep += ", \(key): \(value)"
        }
        if let webhookPort { ep += ", webhook: http://127.0.0.1:\(webhookPort)/hooks" }
        if !endpoint.isEmpty { ep += ", " + endpoint }
        try dir.write("config.yaml", "endpoints:\n  gpu: { \(ep) }\n")
        try dir.write("secrets.yaml", "endpoints:\n  gpu: { token: \(Self.token), webhookSecret: \(Self.webhookSecret) }\n")
        chmod(dir.path + "/secrets.yaml", 0o600)
        env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": dir.path + "/config.yaml", "FLOWDIR_SECRETS": dir.path + "/secrets.yaml",
               "XDG_STATE_HOME": dir.path + "/state"]
        try FileManager.default.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
    }

    let serverArguments: [String]
    let serverPort: Int

    /// The job server again, on the same port and folder (after `server.stop()`).
    func restartServer() throws {
        server = try JobServerProcess(dir: dir.path + "/jobserver", arguments: serverArguments + ["--port", String(server.port)], port: server.port)
    }

    deinit {
        if let watch { kill(watch.processIdentifier, SIGKILL); watch.waitUntilExit() }
    }

    @discardableResult
    func flowdir(_ args: [String], environment: [String: String] = [:]) throws -> CommandResult {
        try CommandRunner.flowdir(args, in: dir.path, environment: env.merging(environment) { $1 })
    }

    /// `flowdir ARGS` started and left running (its output dropped), for a test to kill.
    func start(_ args: [String], environment: [String: String] = [:]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
        p.arguments = args
        p.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }.merging(environment) { $1 }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    func new(_ name: String = "inst") throws -> String {
        let r = try flowdir(["new", "wf/t.yaml", "root/" + name])
        #expect(r.status == 0, "\(r.stderr)")
        return dir.path + "/root/" + name
    }

    func startWatch() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
        p.arguments = ["watch", dir.path + "/root"]
        var e = ProcessInfo.processInfo.environment
        for (k, v) in env { e[k] = v }
        p.environment = e
        FileManager.default.createFile(atPath: watchLog, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: watchLog))
        p.standardOutput = handle
        p.standardError = handle
        try p.run()
        watch = p
        try waitFor("the watcher to start") { (try? String(contentsOfFile: self.watchLog, encoding: .utf8))?.contains("] ready") ?? false }
    }

    func stopWatch() {
        guard let p = watch else { return }
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        watch = nil
    }

    func waitFor(_ what: String, timeout: Double = 20, _ condition: () throws -> Bool) throws {
        if try Eventually.blockingUntil(timeout: .seconds(timeout), every: .milliseconds(20), condition) { return }
        let log = (try? String(contentsOfFile: watchLog, encoding: .utf8)) ?? ""
        throw GitCLI.Failure(description: "timed out waiting for \(what); watcher log:\n\(log)")
    }

    /// The job server's requests of `method path*`, with when each came (seconds since the epoch).
    func requests(_ method: String, _ pathPrefix: String) -> [Double] {
        server.accessLog.compactMap { line in
            let f = line.split(separator: " ")
            guard f.count >= 5, f[2] == method, f[3].hasPrefix(pathPrefix) else { return nil }
            return Double(f[1])
        }
    }

    /// The job server's predictions, as it keeps them.
    func predictions() -> [[String: Any]] {
        let folder = server.dir + "/predictions"
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).compactMap { name in
            guard let data = FileManager.default.contents(atPath: folder + "/" + name),
                  let wrapper = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
            return wrapper["prediction"] as? [String: Any]
        }
    }

    func state(_ inst: String, _ node: String) -> String { InstanceProbe.state(inst, node) }

    func stateFile(_ inst: String, _ node: String) -> String {
        (try? String(contentsOfFile: inst + "/nodes/\(node)/state.yaml", encoding: .utf8)) ?? ""
    }
}
