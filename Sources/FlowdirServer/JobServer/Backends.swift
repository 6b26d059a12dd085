import AsyncHTTPClient
import FlowdirCore
import FlowdirIO
import Logging
import NIOCore
import NIOHTTP1

/// What a model's backend says of a prediction.
enum BackendEvent: Sendable {
    case started
    /// The whole log so far.
    case logs(String)
    case succeeded(BackendOutput)
    case failed(String)
    case canceled
}

enum BackendOutput: Sendable {
    /// As the backend gave it; `data:` URIs in it become files the server serves.
    case json(JSONValue)
    /// Files by output port; `single` names the port when there is only one
    /// (then `output` is its URL, else an object of URLs by port).
    case files([(port: String, bytes: [UInt8], name: String)], single: String?)
}

/// A model the job server runs predictions of: a cog server it fronts, or a
/// flowdir tool whose command it runs (DESIGN.md §12).
protocol ModelBackend: Sendable {
    /// Starts the prediction (or queues it while the model is busy). Inputs
    /// that are files come as `data:` URIs.
    func start(id: String, input: [String: JSONValue], report: @escaping @Sendable (BackendEvent) -> Void) async
    func cancel(id: String) async
    /// The log of a running prediction, when the backend keeps it itself.
    func currentLogs(id: String) -> String?
    /// A webhook from the model server (cog).
    func received(id: String, _ body: JSONValue) async
}

extension ModelBackend {
    func currentLogs(id: String) -> String? { nil }
    func received(id: String, _ body: JSONValue) async {}
}

// MARK: Tools

/// A flowdir tool file as a model: its `run.command` run here, inputs from
/// the prediction's input, outputs served as files.
final class ToolBackend: ModelBackend {
    let tool: ToolDefinition
    let template: CommandTemplate
    let workRoot: String
    let runner = LocalRunner()
    let running = Locked<[String: CancelToken]>([:])

    init(tool: ToolDefinition, workRoot: String) throws(JobServerError) {
        guard case .command(let template) = tool.run else {
            throw .badModel("tool \(tool.kind) has no run.command to run")
        }
        self.tool = tool
        self.template = template
        self.workRoot = workRoot
    }

    func start(id: String, input: [String: JSONValue], report: @escaping @Sendable (BackendEvent) -> Void) async {
        let work = workRoot + "/" + id
        do {
            try Files.makeDirectories(work + "/inputs")
            var inputs: [String: String] = [:]
            for port in tool.inputs {
                guard let value = input[port.name]?.stringValue else {
                    if port.optional { continue }
                    return report(.failed("input '\(port.name)' is missing: this model needs a file for it"))
                }
                guard let bytes = JobAPIClient.decodeDataURI(value) else {
                    return report(.failed("input '\(port.name)' is not a data: URI or a file of this server"))
                }
                let ext = ContentFormat.defaultExtension(for: port.type)
                let path = work + "/inputs/\(port.name).\(ext)"
                try Files.writeAtomically(path, bytes)
                inputs[port.name] = path
            }
            var params: [String: String] = [:]
            for p in tool.params { if let d = p.defaultValue { params[p.name] = d.plainText } }
            for (key, value) in input where !tool.inputs.contains(where: { $0.name == key }) {
                switch value {
                case .string(let s): params[key] = s
                case .number(let n): params[key] = ParamValue.plainNumber(n)
                case .bool(let b): params[key] = b ? "true" : "false"
                default: params[key] = String(decoding: value.bytes, as: UTF8.self)
                }
            }
            var outputs: [String: String] = [:]
            for port in tool.outputs {
                outputs[port.name] = work + "/\(port.name)." + (port.ext ?? ContentFormat.defaultExtension(for: port.type))
            }
            let argv = template.expand(inputs: inputs, outputs: outputs, params: params, runDir: work,
                                       toolDir: tool.file.map(Path.directory(of:)) ?? work)
            let cancel = CancelToken()
            running.locked { $0[id] = cancel }
            report(.started)
            let ports = tool.outputs
            let written = outputs
            runner.start(LocalJob(argv: argv, workingDirectory: work, logPath: work + "/log.txt", grace: 2), cancel: cancel) { [running] end, _ in
                let wasCancelled = running.locked { $0.removeValue(forKey: id) }.map { _ in false } ?? true
                let logs = (try? LocalFileSystem().readFile(work + "/log.txt", limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) } ?? ""
                if !logs.isEmpty { report(.logs(logs)) }
                defer { try? Files.removeTree(work) }
                switch end {
                case .exited(0):
                    var files: [(port: String, bytes: [UInt8], name: String)] = []
                    for port in ports {
                        guard let path = written[port.name], let bytes = try? LocalFileSystem().readFile(path, limit: 1 << 32) else {
                            if port.optional { continue }
                            return report(.failed("the tool did not write its output '\(port.name)'"))
                        }
                        files.append((port.name, bytes, Path.basename(path)))
                    }
                    report(.succeeded(.files(files, single: ports.count == 1 ? ports[0].name : nil)))
                case .signaled where wasCancelled, .exited where wasCancelled:
                    report(.canceled)
                case .exited(let code):
                    let last = logs.split(separator: "\n").last.map { ": \($0)" } ?? ""
                    report(.failed("exited with code \(code)\(last)"))
                case .signaled(let signal):
                    report(.failed("killed by signal \(signal)"))
                case .spawnFailed(let why):
                    report(.failed("could not start \(argv.first ?? "?"): \(why)"))
                }
            }
        } catch {
            report(.failed("cannot prepare the run: \(error)"))
        }
    }

    func cancel(id: String) async {
        // Taken out first: its end then reads as cancelled.
        running.locked { $0.removeValue(forKey: id) }?.cancel()
    }

    func currentLogs(id: String) -> String? {
        (try? LocalFileSystem().readFile(workRoot + "/\(id)/log.txt", limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) }
    }
}

// MARK: cog

/// A cog server (`python -m cog.server.http`) as a model, spoken to in
/// cog's own API: `PUT /predictions/{id}` with `Prefer: respond-async` and
/// a webhook back here. It runs one prediction at a time and answers 409
/// when busy: the rest wait here, `starting`.
actor CogBackend: ModelBackend {
    let url: String
    let http: HTTPClient
    let logger: Logger
    /// Where cog's webhooks reach this server: `<base>/_cog/<id>`.
    var webhookBase: String = ""
    var queue: [(id: String, input: [String: JSONValue], report: @Sendable (BackendEvent) -> Void)] = []
    var reports: [String: @Sendable (BackendEvent) -> Void] = [:]
    var busy: String?
    var pumping = false

    init(url: String, http: HTTPClient = .shared, logger: Logger) {
        var u = url
        while u.hasSuffix("/") { u.removeLast() }
        self.url = u
        self.http = http
        self.logger = logger
    }

    func setWebhookBase(_ base: String) { webhookBase = base }

    func start(id: String, input: [String: JSONValue], report: @escaping @Sendable (BackendEvent) -> Void) async {
        queue.append((id, input, report))
        reports[id] = report
        await pump()
    }

    /// Sends the next queued prediction once cog is free.
    func pump() async {
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        while busy == nil, !queue.isEmpty {
            let next = queue[0]
            var request = HTTPClientRequest(url: "\(url)/predictions/\(next.id)")
            request.method = .PUT
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "Prefer", value: "respond-async")
            let body = JSONValue.object(["id": .string(next.id), "input": .object(next.input),
                                         "webhook": .string("\(webhookBase)/_cog/\(next.id)"),
                                         "webhook_events_filter": .array(["start", "output", "logs", "completed"].map(JSONValue.string))])
            request.body = .bytes(ByteBuffer(bytes: body.bytes))
            do {
                let response = try await http.execute(request, timeout: .seconds(30))
                let status = response.status.code
                let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
                if status == 409 {
                    // Busy with one of someone else's: try again shortly.
                    try? await Task.sleep(for: .milliseconds(200))
                    continue
                }
                queue.removeFirst()
                guard (200..<300).contains(status) else {
                    next.report(.failed("the model server refused it: \(status) \(text.prefix(300))"))
                    reports[next.id] = nil
                    continue
                }
                busy = next.id
            } catch {
                queue.removeFirst()
                reports[next.id] = nil
                next.report(.failed("the model server at \(url) cannot be reached: \(error)"))
            }
        }
    }

    func received(id: String, _ body: JSONValue) async {
        guard let report = reports[id] else { return }
        if let logs = body["logs"]?.stringValue, !logs.isEmpty { report(.logs(logs)) }
        switch body["status"]?.stringValue {
        case "processing"?:
            report(.started)
        case "succeeded"?:
            report(.succeeded(.json(body["output"] ?? .null)))
            finished(id)
        case "failed"?:
            report(.failed(body["error"]?.stringValue ?? "the model failed"))
            finished(id)
        case "canceled"?:
            report(.canceled)
            finished(id)
        default:
            break
        }
        if busy == nil { await pump() }
    }

    func finished(_ id: String) {
        reports[id] = nil
        if busy == id { busy = nil }
    }

    func cancel(id: String) async {
        if let i = queue.firstIndex(where: { $0.id == id }) {
            let item = queue.remove(at: i)
            reports[id] = nil
            item.report(.canceled)
            return
        }
        guard busy == id else { return }
        var request = HTTPClientRequest(url: "\(url)/predictions/\(id)/cancel")
        request.method = .POST
        do {
            _ = try await http.execute(request, timeout: .seconds(10))
        } catch {
            logger.warning("cancel at the model server failed", metadata: ["id": .string(id), "error": .string("\(error)")])
        }
    }
}
