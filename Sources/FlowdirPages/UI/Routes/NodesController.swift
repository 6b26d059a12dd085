import FlowdirCore
import FlowdirIO
import FoundationEssentials
import HTTPTypes
import Hummingbird
import Logging

/// One node of an instance: its log and run history, and what the person
/// does to it: answer its question (files, a choice, approve or decline),
/// claim or release the question, snooze, skip, cancel, retry, re-run, and
/// its params written back to `params.yaml`.
struct NodesController: Sendable {
    let backend: any UIBackend
    /// Largest answer a page may upload (the config's `answerSizeLimit`).
    let uploadLimit: Int
    let logger: Logger

    func addRoutes(to router: Router<UIContext>) {
        let node = router.group("/api/instances/:id/nodes/:node")
        node.get("log", use: log)
        node.get("history", use: history)
        node.post(":verb", use: act)
        node.put("params", use: setParams)
        // Both spelled out: a literal `claim` in the route tree hides `:verb` beside it.
        node.post("claim") { _, context throws(UIError) in
            try await RouteSupport.act(backend, logger, context, node: true) { () throws(UIError) in .claim }
        }
        node.delete("claim") { _, context throws(UIError) in
            try await RouteSupport.act(backend, logger, context, node: true) { () throws(UIError) in .release }
        }
    }

    /// The tail of a run's log (the latest run's unless `?run=`), as text.
    @Sendable func log(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        let folder = try backend.folder(of: try RouteSupport.param(context, "id"))
        let node = try RouteSupport.nodeParam(context)
        let runs = folder + "/" + InstancePaths.node(node) + "/runs"
        let run = request.uri.queryParameters.get("run").flatMap { Int($0) }
            ?? ((try? LocalFileSystem().listDirectory(runs)) ?? []).compactMap { Int($0) }.max()
        guard let run else { return RouteSupport.text("") }
        let bytes = LogLines.tail(inside: folder, InstancePaths.node(node) + "/runs/\(run)/log.txt", bytes: 64 << 10) ?? []
        return RouteSupport.text(String(decoding: bytes, as: UTF8.self))
    }

    @Sendable func history(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        let node = try RouteSupport.nodeParam(context)
        return RouteSupport.json(try await backend.history(try RouteSupport.param(context, "id"), node: node))
    }

    @Sendable func act(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        try await RouteSupport.act(backend, logger, context, node: true) { () throws(UIError) in
            try await action(try RouteSupport.param(context, "verb"), request)
        }
    }

    @Sendable func setParams(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        try await RouteSupport.act(backend, logger, context, node: true) { () throws(UIError) in
            let body = try await RouteSupport.body(request, limit: 1 << 20)
            guard case .object(let params)? = body[key: "params"]?.value else { throw UIError(400, "give {\"params\": {…}}") }
            return .setParams(params)
        }
    }

    func action(_ verb: String, _ request: Request) async throws(UIError) -> UIAction {
        switch verb {
        case "answer": return try await answer(request)
        case "claim": return .claim
        case "snooze":
            let body = try await RouteSupport.body(request, limit: 1 << 16)
            return .snooze(seconds: body[key: "seconds"]?.value.numberValue)
        case "skip": return .skip
        case "cancel": return .cancel
        case "retry":
            let body = try await RouteSupport.body(request, limit: 1 << 16)
            guard let v = body[key: "run"]?.value, v != .null else { return .retry(run: nil) }
            guard case .int(let n) = v, n >= 1 else { throw UIError(400, "`run` is a run number, 1 or more") }
            return .retry(run: n)
        case "rerun": return .rerun
        case "run": return .runNode
        case "pin": return .pin(try RouteSupport.flag(try await RouteSupport.body(request, limit: 1 << 16), "pinned"))
        default: throw UIError(404, "no action '\(verb)' on a node", hint: "answer, claim, snooze, skip, cancel, retry, rerun, run or pin")
        }
    }

    /// An answer as the page sends it: files (base64, up to the upload
    /// limit), a choice, approve (with params) or decline.
    func answer(_ request: Request) async throws(UIError) -> UIAction {
        let body = try await RouteSupport.body(request, limit: uploadLimit)
        if case .array(let files)? = body[key: "files"]?.value {
            var uploads: [UIUpload] = []
            for f in files {
                guard case .object(let o) = f, let port = o[key: "port"]?.value.stringValue,
                      let data = o[key: "base64"]?.value.stringValue else {
                    throw UIError(400, "each file needs `port` and `base64`")
                }
                guard let bytes = Data(base64Encoded: data, options: .ignoreUnknownCharacters) else {
                    throw UIError(400, "the file for '\(port)' is not base64")
                }
                uploads.append(UIUpload(port: port, name: o[key: "name"]?.value.stringValue ?? port, bytes: Array(bytes)))
            }
            return .answerFiles(uploads)
        }
        if let choice = body[key: "choice"]?.value.stringValue { return .answerChoice(choice) }
        if case .bool(true)? = body[key: "approve"]?.value {
            if case .object(let params)? = body[key: "params"]?.value { return .approve(params: params) }
            return .approve(params: [])
        }
        if case .bool(true)? = body[key: "decline"]?.value { return .decline }
        throw UIError(400, "give files, a choice, approve or decline")
    }
}
