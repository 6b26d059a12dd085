import FlowdirCore
import HTTPTypes
import Hummingbird
import NIOCore

/// The pages themselves (the files in `Pages/`, each at its name, `/` for
/// `index.html`), and `/open?link=flowdir://…`, which sends the browser to
/// the card a link names.
struct PagesController: Sendable {
    func addRoutes(to router: Router<UIContext>) {
        for (path, asset) in UIAssets.all {
            router.get(RouterPath(path)) { _, _ in
                Response(status: .ok, headers: [.contentType: asset.contentType, .cacheControl: "no-cache"],
                         body: .init(byteBuffer: ByteBuffer(bytes: asset.bytes)))
            }
        }
        router.get("/open", use: open)
    }

    @Sendable func open(_ request: Request, context: UIContext) throws(UIError) -> Response {
        guard let text = request.uri.queryParameters.get("link") else { throw UIError(400, "give ?link=flowdir://…") }
        switch AwaitLink.parse(text) {
        case .failure(let bad): throw UIError(400, bad.description)
        case .success(let link):
            return Response(status: .found, headers: [.location: "/#/w/" + UIServer.percentEncoded(link.instanceID) + "/" + UIServer.percentEncoded(link.node)])
        }
    }
}
