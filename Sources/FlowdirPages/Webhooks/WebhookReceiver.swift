import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// Where job APIs call back when a job ends (an endpoint's `webhook:`;
/// docs/security.md, "The webhook receiver"): `POST <its path>/<endpoint>`,
/// that exact path and no other. A call is believed only when signed with that
/// endpoint's webhook secret within 5 minutes, and only once per `webhook-id`;
/// anything else is logged and ignored (polling still finds the job's state).
/// Bodies, headers and idle connections are bounded.
public struct WebhookReceiver: Sendable {
    /// A prediction is JSON with its logs; far larger is not a job API's.
    public static let bodyLimit = 2 << 20

    let host: String
    let port: Int
    /// Exact request path → (endpoint, its webhook secret).
    let routes: [String: (endpoint: String, secret: String)]
    let deliver: @Sendable (String, Prediction) async -> Void
    let logger: Logger
    let seen: Locked<WebhookReplaySet>

    /// `routes`: each path a backend is told to call (`WebhookPlan`), with
    /// its endpoint and secret. An endpoint without a secret has no route.
    public init(host: String, port: Int, routes: [String: (endpoint: String, secret: String)], logger: Logger,
                remembering capacity: Int = 10_000,
                deliver: @escaping @Sendable (_ endpoint: String, Prediction) async -> Void) {
        self.host = host
        self.port = port
        self.routes = routes
        self.logger = logger
        self.deliver = deliver
        self.seen = Locked(WebhookReplaySet(capacity: capacity))
    }

    public func application(onStart: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router()
        let receiver = self
        router.post("**") { request, _ -> Response in try await receiver.respond(request) }
        // Headers a job API sends are small; an idle connection is closed.
        let http1 = HTTP1Channel.Configuration(idleTimeout: .seconds(30), httpDecoderConfiguration: .init(
            maxHeaderFieldSize: 16 << 10, maxHeaderListSize: 32 << 10, maxHeaderFieldCount: 100))
        return Application(router: router, server: .http1(configuration: http1), configuration: .init(address: .hostname(host, port: port)),
                           onServerRunning: { channel in await onStart(channel.localAddress?.port ?? 0) }, logger: logger)
    }

    func respond(_ request: Request) async throws -> Response {
        guard let route = routes[request.uri.path] else { return Response(status: .notFound) }
        let buffer: ByteBuffer
        do { buffer = try await request.body.collect(upTo: Self.bodyLimit) } catch {
            logger.warning("webhook ignored: its body is over \(ByteCount(Self.bodyLimit))", metadata: ["endpoint": .string(route.endpoint)])
            return Response(status: .contentTooLarge)
        }
        let body = Array(buffer.readableBytesView)
        let h = request.headers
        func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { h[$0] } }
        let now = SystemClock().now().seconds
        let checked = seen.locked { seen in
            WebhookCheck.check(body: body, id: header("webhook-id"), timestamp: header("webhook-timestamp"),
                               signature: header("webhook-signature"), endpoint: route.endpoint, secret: route.secret,
                               now: now, seen: &seen)
        }
        switch checked {
        case .failure(.replayed):
            // Believed once already: acknowledged, so a sender's retries stop; not acted on again.
            logger.info("webhook ignored: \(WebhookSignature.Rejection.replayed)", metadata: ["endpoint": .string(route.endpoint)])
            return Response(status: .ok)
        case .failure(let why):
            logger.warning("webhook ignored: \(why)", metadata: ["endpoint": .string(route.endpoint)])
            return Response(status: .unauthorized)
        case .success:
            guard let json = JSONValue.parse(body), let p = Prediction(json: json) else {
                logger.warning("webhook ignored: its body is not a prediction", metadata: ["endpoint": .string(route.endpoint)])
                return Response(status: .badRequest)
            }
            await deliver(route.endpoint, p)
            return Response(status: .ok)
        }
    }
}
