import FlowdirCore
import FlowdirIO

/// A flowdir tool file as a model (`tools/<Kind>`): its `run.command` run
/// here for each prediction. File inputs (`data:` URIs) are written to the
/// prediction's folder and given as `{inputs.P}`, other inputs as
/// `{params.K}`; what the command writes to `{outputs.P}` is served.
///
/// Each run is a process in its own group, waited on by `LocalRunner`'s
/// one watching thread: a thousand long predictions cost a thousand
/// processes here and nothing more (no thread, no timer each).
final class ToolBackend: ModelBackend {
    let tool: ToolDefinition
    let template: CommandTemplate
    let workRoot: String
    let runner = LocalRunner()
    /// Running predictions; taken out by `cancel` first, so that an end
    /// found missing here was asked for.
    let running = Locked<[String: CancelToken]>([:])

    init(tool: ToolDefinition, workRoot: String) throws(JobServerError) {
        guard case .command(let template) = tool.run else {
            throw .badModel("tool \(tool.kind) has no run.command to run here")
        }
        self.tool = tool
        self.template = template
        self.workRoot = workRoot
    }

    func start(id: String, input: [String: JSONValue], report: @escaping @Sendable (BackendEvent) -> Void) async {
        let work = workRoot + "/" + id
        let argv: [String]
        let outputs: [String: String]
        do {
            try Files.makeDirectories(work + "/inputs")
            var inputs: [String: String] = [:]
            for port in tool.inputs {
                guard let value = input[port.name]?.stringValue else {
                    if port.optional { continue }
                    return report(.failed("input '\(port.name)' is missing: this model needs a file for it"))
                }
                guard let bytes = JobAPIClient.decodeDataURI(value) else {
                    return report(.failed("input '\(port.name)' is neither a data: URI nor a file of this server"))
                }
                let path = work + "/inputs/\(port.name).\(ContentFormat.defaultExtension(for: port.type))"
                try Files.writeAtomically(path, bytes)
                inputs[port.name] = path
            }
            var params: [String: String] = [:]
            for p in tool.params { if let d = p.defaultValue { params[p.name] = d.plainText } }
            for (key, value) in input where !tool.inputs.contains(where: { $0.name == key }) {
                params[key] = Self.plain(value)
            }
            var written: [String: String] = [:]
            for port in tool.outputs {
                written[port.name] = work + "/\(port.name)." + (port.ext ?? ContentFormat.defaultExtension(for: port.type))
            }
            outputs = written
            argv = template.expand(inputs: inputs, outputs: outputs, params: params, runDir: work,
                                   toolDir: tool.file.map(Path.directory(of:)) ?? work)
        } catch {
            try? Files.removeTree(work)
            return report(.failed("cannot prepare the run in \(work): \(error)"))
        }
        let cancel = CancelToken()
        running.locked { $0[id] = cancel }
        report(.started)
        let ports = tool.outputs
        runner.start(LocalJob(argv: argv, workingDirectory: work, logPath: work + "/log.txt", grace: 2), cancel: cancel) { [running] end, _ in
            let wasCancelled = running.locked { $0.removeValue(forKey: id) } == nil
            let logs = Self.readLog(work)
            if !logs.isEmpty { report(.logs(logs)) }
            defer { try? Files.removeTree(work) }
            switch end {
            case _ where wasCancelled:
                report(.canceled)
            case .exited(0):
                var files: [(port: String, bytes: [UInt8], name: String)] = []
                for port in ports {
                    guard let path = outputs[port.name], let bytes = try? LocalFileSystem().readFile(path, limit: 1 << 32) else {
                        if port.optional { continue }
                        return report(.failed("the tool exited 0 but did not write its output '\(port.name)'"))
                    }
                    files.append((port.name, bytes, Path.basename(path)))
                }
                report(.succeeded(.files(files, single: ports.count == 1 ? ports[0].name : nil)))
            case .exited(let code):
                let last = logs.split(separator: "\n").last.map { ": \($0)" } ?? ""
                report(.failed("exited with code \(code)\(last)"))
            case .signaled(let signal):
                report(.failed("killed by signal \(signal)"))
            case .spawnFailed(let why):
                report(.failed("could not start \(argv.first ?? "?"): \(why)"))
            }
        }
    }

    func cancel(id: String) async -> Bool {
        // SIGTERM to its group, SIGKILL after the grace period; its end says the rest.
        running.locked { $0.removeValue(forKey: id) }?.cancel()
        return false
    }

    func shutdown() async {
        for token in running.locked({ r in defer { r.removeAll() }; return Array(r.values) }) { token.cancel() }
    }

    func currentLogs(id: String) -> String? {
        let logs = Self.readLog(workRoot + "/" + id)
        return logs.isEmpty ? nil : logs
    }

    static func readLog(_ work: String) -> String {
        (try? LocalFileSystem().readFile(work + "/log.txt", limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// An input as a param's text: strings as they are, numbers without `.0`.
    static func plain(_ value: JSONValue) -> String {
        switch value {
        case .string(let s): s
        case .number(let n): ParamValue.plainNumber(n)
        case .bool(let b): b ? "true" : "false"
        case .null: ""
        default: String(decoding: value.bytes, as: UTF8.self)
        }
    }
}
