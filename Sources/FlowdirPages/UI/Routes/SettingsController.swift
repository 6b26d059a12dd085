import FlowdirCore
import HTTPTypes
import Hummingbird
import Logging

/// The Settings page: what the config says, whether each endpoint answers,
/// the space large files take and freeing it (docs/serve.md, "Settings").
/// Pins are actions on an instance or a node (`…/pin`), beside the others.
struct SettingsController: Sendable {
    let backend: any UIBackend
    let logger: Logger

    func addRoutes(to router: Router<UIContext>) {
        router.get("/api/settings") { _, _ throws(UIError) in RouteSupport.json(try await backend.settings()) }
        router.get("/api/settings/endpoints") { _, _ throws(UIError) in RouteSupport.json(try await backend.endpointChecks()) }
        router.get("/api/storage") { _, _ throws(UIError) in RouteSupport.json(try await backend.storage()) }
        router.post("/api/storage/free", use: free)
    }

    /// `{"dryRun": true}` says what would be freed; `{"dryRun": false}` frees it.
    /// No default: a page that forgot the field never frees by mistake.
    @Sendable func free(_ request: Request, context: UIContext) async throws(UIError) -> Response {
        let body = try await RouteSupport.body(request, limit: 1 << 20)
        guard case .bool(let dryRun)? = body[key: "dryRun"]?.value else {
            throw UIError(400, "give {\"dryRun\": true} to see what would be freed, or {\"dryRun\": false} to free it")
        }
        let report = try await backend.freeSpace(dryRun: dryRun)
        if !dryRun { logger.notice("storage freed from the pages") }
        return RouteSupport.json(report)
    }
}
