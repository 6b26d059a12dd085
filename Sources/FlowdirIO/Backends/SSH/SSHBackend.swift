import FlowdirCore
import FlowdirTemplates

/// `run.ssh` (docs/ssh-backend.md): a tool's argv run on a machine reached
/// with the user's own ssh, in a run folder there, detached from the
/// connection. Inputs (and `{tool.dir}`) are copied in, outputs fetched back.
public struct SSHBackend: Backend {
    public let key = "ssh"
    public let traits = BackendTraits()

    /// Where runs live on the host when the tool does not say.
    public static let defaultDir = "~/.cache/flowdir/jobs"

    public init() {}

    public func checkRun(_ value: MarkedValue, tool: ToolDefinition, sink: DiagnosticSink) -> Bool {
        let context = "`run.ssh` of tool \(tool.kind)"
        guard var r = MappingReader(value, context: context, sink: sink) else { return false }
        defer { r.finish() }
        var ok = true
        if let host = r.string("host", required: true) {
            // Never read by ssh as an option (`-oProxyCommand=…`), nor as two words.
            if host.isEmpty || host.hasPrefix("-") || host.contains(where: { $0.isWhitespace || $0.isNewline }) {
                sink.malformed("`host` of \(context) must be an ssh destination like gpu-box or me@gpu-box, found '\(host)'",
                               at: r.value("host")?.location ?? value.location, hint: "a name from ~/.ssh/config works as ssh takes it")
                ok = false
            }
        } else {
            ok = false
        }
        if let command = r.value("command") {
            ok = ArgvReader.read(command, tool: tool, context: "run.ssh.command", sink: sink) != nil && ok
        } else {
            sink.malformed("\(context) has no `command`", at: value.location,
                           hint: "add `command: [python3, \"{tool.dir}/stylize.py\", \"{inputs.image}\", \"{outputs.image}\"]`")
            ok = false
        }
        if let dir = r.string("dir"), dir.isEmpty || dir.contains(where: \.isNewline) {
            sink.malformed("`dir` of \(context) must be a folder on the host, like \(Self.defaultDir)", at: r.value("dir")?.location ?? value.location)
            ok = false
        }
        return ok
    }

    /// `ssh: { pollInterval: 10s, command: "ssh -F ~/.ssh/other_config" }`.
    public func checkSettings(_ entry: ParamEntry, file: String) -> Diagnostic? {
        let at = entry.location ?? SourceLocation(file: file, line: 1, column: 1)
        guard case .object(let fields) = entry.value else {
            return .error(.malformedFile, "`ssh` must be a mapping: { pollInterval: 10s }", at: at)
        }
        for f in fields {
            switch f.key {
            case "pollInterval":
                if (ConfigDecoder.duration(f.value) ?? 0) <= 0 {
                    return .error(.malformedFile, "`ssh.pollInterval` must be a duration like 10s" + ConfigDecoder.durationTooLong(f.value),
                                  at: f.location ?? at)
                }
            case "command":
                guard let words = f.value.stringValue, !words.trimmingCharacters(in: .whitespaces).isEmpty else {
                    return .error(.malformedFile, "`ssh.command` must be the ssh command as shell words, like \"ssh -F ~/.ssh/config\"",
                                  at: f.location ?? at)
                }
            default:
                return .error(.malformedFile, "`ssh` takes `pollInterval` and `command`, not `\(f.key)`", at: f.location ?? at)
            }
        }
        return nil
    }

    public func job(for run: BackendRun) throws -> BackendJob {
        guard let host = run.entries[key: "host"]?.value.stringValue, !host.isEmpty else {
            throw BackendRun.Invalid("tool \(run.tool.kind): run.ssh needs `host:`, an ssh destination")
        }
        guard case .array(let items)? = run.entries[key: "command"]?.value, !items.isEmpty,
              let template = try? CommandTemplate(parsing: items.map { $0.stringValue ?? $0.plainText }) else {
            throw BackendRun.Invalid("tool \(run.tool.kind): run.ssh needs `command:`, an argv list")
        }
        // Paths on the host, relative to the run folder the job starts in.
        var uploads: [SSHWork.Upload] = []
        var inputs: [String: String] = [:]
        for (port, path) in run.inputs.sorted(by: { $0.key < $1.key }) {
            let ext = Path.fileExtension(path)
            let name = "inputs/" + port + (ext.isEmpty ? "" : "." + ext)
            uploads.append(SSHWork.Upload(local: path, remote: name))
            inputs[port] = name
        }
        let outputs = run.outputs.mapValues(Path.basename)
        let usesTool = template.arguments.contains { $0.contains(.toolDir) }
        let argv = template.expand(inputs: inputs, outputs: outputs, params: run.params, runDir: ".", toolDir: "tool")
        let work = SSHWork(host: host, dir: run.entries[key: "dir"]?.value.stringValue ?? Self.defaultDir, argv: argv,
                           uploads: uploads, toolDir: usesTool ? run.toolDir : nil)
        return BackendJob(payload: work, command: ["ssh:" + host] + argv)
    }

    public func executor(_ setup: BackendSetup) throws -> (any Executor)? {
        let settings = setup.settings(key)
        let poll = settings[key: "pollInterval"].flatMap { ConfigDecoder.duration($0.value) } ?? 10
        let clock = setup.clock
        return SSHExecutor(pollInterval: poll, sshCommand: settings[key: "command"]?.value.stringValue, logger: setup.logger,
                           now: { clock.instant.sinceOrigin.seconds }, wall: { clock.now() }, sleep: { try? await clock.sleep(for: .seconds($0)) })
    }
}

/// An ssh job: where, what, and what to copy there first.
public struct SSHWork: Sendable {
    public struct Upload: Sendable, Equatable {
        public var local: String
        /// Its path in the run folder.
        public var remote: String
    }

    public var host: String
    /// Where runs live on the host (`~/` is the home folder there).
    public var dir: String
    /// Run in the run folder, its paths relative to it.
    public var argv: [String]
    public var uploads: [Upload]
    /// The tool's folder, copied as `tool/`, when the argv names `{tool.dir}`.
    public var toolDir: String?
}
