import FlowdirCore
import FlowdirIO
import Foundation

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

    /// Every file input checked by content against its port's type, and
    /// every param against the tool's schema, before anything runs: a
    /// tool is only ever given files whose type was checked (an SVG posing
    /// as a PNG never reaches ImageMagick) and params it declares.
    func validate(input: [String: JSONValue]) -> String? {
        switch prepared(input) {
        case .success: return nil
        case .failure(let why): return why.description
        }
    }

    struct Refused: Error, CustomStringConvertible { var description: String }

    /// The input files (bytes and the format their content is) and the params as text.
    func prepared(_ input: [String: JSONValue]) -> Result<(files: [(port: String, bytes: [UInt8], format: ContentFormat)], params: [String: String]), Refused> {
        var files: [(port: String, bytes: [UInt8], format: ContentFormat)] = []
        for port in tool.inputs {
            guard let given = input[port.name], given != .null else {
                if port.optional { continue }
                return .failure(Refused(description: "input '\(port.name)' is missing: \(tool.kind) needs a file for it (\(port.type.rawValue))"))
            }
            guard let value = given.stringValue, let bytes = JobAPIClient.decodeDataURI(value) else {
                return .failure(Refused(description: "input '\(port.name)' is neither a data: URI nor a file of this server"))
            }
            do {
                files.append((port.name, bytes, try ContentCheck.check(bytes, as: port.type)))
            } catch {
                return .failure(Refused(description: "input '\(port.name)' is not a valid \(port.type.rawValue): \(error.reason)"))
            }
        }
        var params: [String: String] = [:]
        for p in tool.params { if let d = p.defaultValue { params[p.name] = d.plainText } }
        for (key, value) in input.sorted(by: { $0.key < $1.key }) where !tool.inputs.contains(where: { $0.name == key }) {
            guard let schema = tool.param(key) else {
                guard tool.acceptsAnyParams else {
                    let known = tool.inputs.map(\.name) + tool.params.map(\.name)
                    return .failure(Refused(description: "\(tool.kind) has no input or param '\(key.prefix(100))'" + (known.isEmpty ? "" : "; it takes: " + known.joined(separator: ", "))))
                }
                params[key] = Self.plain(value)
                continue
            }
            let typed = Self.paramValue(value, as: schema.type)
            if let problem = ParamValidator.problem(with: typed, schema: schema) {
                return .failure(Refused(description: "param '\(key)' \(problem.message)" + (problem.hint.map { " (\($0))" } ?? "")))
            }
            if typed != .null { params[key] = typed.plainText }
        }
        for schema in tool.params where schema.required && schema.defaultValue == nil && (input[schema.name] ?? .null) == .null {
            return .failure(Refused(description: "param '\(schema.name)' is required by \(tool.kind) (\(schema.type.rawValue))"))
        }
        return .success((files, params))
    }

    /// A JSON value as the param it stands for. A number or a boolean may
    /// come as its text (as a template's `"{params.x}"` may send it), as
    /// cog's own input checks take it.
    static func paramValue(_ value: JSONValue, as type: ParamType) -> ParamValue {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .number(let n): return n == n.rounded() && abs(n) < 9e15 ? .int(Int(n)) : .double(n)
        case .string(let s):
            let t = s.trimmingCharacters(in: .whitespaces)
            switch type {
            case .integer: if let i = Int(t) { return .int(i) }
            case .number:
                if let i = Int(t) { return .int(i) }
                if let d = Double(t), d.isFinite { return .double(d) }
            case .boolean: if t == "true" || t == "false" { return .bool(t == "true") }
            default: break
            }
            return .string(s)
        case .array(let a): return .array(a.map { paramValue($0, as: .any) })
        case .object(let o): return .object(o.sorted { $0.key < $1.key }.map { ParamEntry(key: $0.key, value: paramValue($0.value, as: .any)) })
        }
    }

    func start(id: String, input: [String: JSONValue], report: @escaping @Sendable (BackendEvent) -> Void) async {
        let work = workRoot + "/" + id
        let argv: [String]
        let outputs: [String: String]
        do {
            let ready: (files: [(port: String, bytes: [UInt8], format: ContentFormat)], params: [String: String])
            switch prepared(input) {
            case .success(let r): ready = r
            case .failure(let why): return report(.failed(why.description))
            }
            try Files.makeDirectories(work + "/inputs")
            var inputs: [String: String] = [:]
            for f in ready.files {
                // Named for what its content is, not what it was called.
                let path = work + "/inputs/\(f.port).\(f.format.fileExtension)"
                try Files.writeAtomically(path, f.bytes)
                inputs[f.port] = path
            }
            let params = ready.params
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
                report(.canceled(nil))
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
