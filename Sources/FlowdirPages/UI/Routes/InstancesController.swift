import FlowdirCore
import HTTPTypes
import Hummingbird
import Logging

/// The instances and their state: the list, one instance's detail, the
/// Action Center's inbox, the templates; and what is done to a whole
/// instance (run what is ready, pause polling, duplicate, archive,
/// delete, new from a template).
struct InstancesController: Sendable {
    let backend: any UIBackend
    let logger: Logger

    func addRoutes(to router: Router<UIContext>) {
        router.get("/api/instances", use: list)
        router.get("/api/instances/:id", use: detail)
        router.get("/api/inbox") { _, _ throws(UIError) in RouteSupport.json(try await backend.inbox()) }
        router.get("/api/templates") { _, _ throws(UIError) in RouteSupport.json(try await backend.templates()) }
        router.post("/api/instances/:id/:verb", use: act)
        router.delete("/api/instances/:id") { _, context throws(UIError) in
            try await RouteSupport.act(backend, logger, context, node: false) { () throws(UIError) in .delete }
        }
        router.post("/api/new", use: create)
    }

    @Sendable func list(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        let q = request.uri.queryParameters
        var query = UIListQuery()
        if let f = q.get("filter") {
            guard let filter = UIListQuery.Filter(rawValue: f) else { throw UIError(400, "filter '\(f)' is not all, active, done or failed") }
            query.filter = filter
        }
        if let s = q.get("sort") {
            guard let sort = UIListQuery.Sort(rawValue: s) else { throw UIError(400, "sort '\(s)' is not recent or name") }
            query.sort = sort
        }
        query.search = q.get("search").flatMap { $0.isEmpty ? nil : $0 }
        query.archived = q.get("archived") == "1" || q.get("archived") == "true"
        return RouteSupport.json(try await backend.list(query))
    }

    @Sendable func detail(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        RouteSupport.json(try await backend.detail(try RouteSupport.param(context, "id")))
    }

    @Sendable func act(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        try await RouteSupport.act(backend, logger, context, node: false) { () throws(UIError) in
            let verb = try RouteSupport.param(context, "verb")
            let body = try await RouteSupport.body(request, limit: 1 << 20)
            switch verb {
            case "polling":
                guard case .bool(let paused)? = body[key: "paused"]?.value else { throw UIError(400, "give {\"paused\": true|false}") }
                return .polling(paused: paused)
            case "run": return .runReady
            case "duplicate": return .duplicate(name: body[key: "name"]?.value.stringValue)
            case "archive":
                if case .bool(let b)? = body[key: "archived"]?.value { return .archive(b) }
                return .archive(true)
            case "pin": return .pin(try RouteSupport.flag(body, "pinned"))
            default: throw UIError(404, "no action '\(verb)' on an instance", hint: "polling, run, duplicate, archive or pin")
            }
        }
    }

    @Sendable func create(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        let body = try await RouteSupport.body(request, limit: 1 << 20)
        guard let template = body[key: "template"]?.value.stringValue, !template.isEmpty else {
            throw UIError(400, "give {\"template\": \"<id or name>\"}", hint: "GET /api/templates lists them")
        }
        return RouteSupport.done(try await backend.create(template: template, name: body[key: "name"]?.value.stringValue))
    }
}
