import FlowdirCore
import FlowdirIO
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// Where job APIs call back when a job ends (an endpoint's `webhook:`,
/// DESIGN.md §5): `POST <path>/<endpoint>`. A call is believed only when
/// signed with that endpoint's webhook secret within 5 minutes; anything
/// else is logged and ignored (polling still finds the job's state).
public struct WebhookReceiver: Sendable {
    let host: String
    let port: Int
    let secrets: [String: String]
    let deliver: @Sendable (String, Prediction) async -> Void
    let logger: Logger

    public init(host: String, port: Int, secrets: [String: String], logger: Logger,
                deliver: @escaping @Sendable (_ endpoint: String, Prediction) async -> Void) {
        self.host = host
        self.port = port
        self.secrets = secrets
        self.logger = logger
        self.deliver = deliver
    }

    public func application(onStart: @escaping @Sendable (Int) async -> Void = { _ in }) -> some ApplicationProtocol {
        let router = Router()
        let secrets = self.secrets
        let deliver = self.deliver
        let logger = self.logger
        router.post("**") { request, _ -> Response in
            let endpoint = String(request.uri.path.split(separator: "/").last ?? "")
            var buffer = try await request.body.collect(upTo: 64 << 20)
            let body = buffer.readBytes(length: buffer.readableBytes) ?? []
            guard let secret = secrets[endpoint] else {
                logger.warning("webhook ignored: no webhookSecret for this endpoint in secrets.yaml", metadata: ["endpoint": .string(endpoint)])
                return Response(status: .unauthorized)
            }
            let h = request.headers
            func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { h[$0] } }
            switch WebhookSignature.verify(body: body, id: header("webhook-id"), timestamp: header("webhook-timestamp"),
                                           signature: header("webhook-signature"), secret: secret, now: SystemClock().now().seconds) {
            case .failure(let why):
                logger.warning("webhook ignored: \(why)", metadata: ["endpoint": .string(endpoint)])
                return Response(status: .unauthorized)
            case .success:
                guard let json = JSONValue.parse(body), let p = Prediction(json: json) else {
                    logger.warning("webhook ignored: its body is not a prediction", metadata: ["endpoint": .string(endpoint)])
                    return Response(status: .badRequest)
                }
                await deliver(endpoint, p)
                return Response(status: .ok)
            }
        }
        return Application(router: router, configuration: .init(address: .hostname(host, port: port)),
                           onServerRunning: { channel in await onStart(channel.localAddress?.port ?? 0) }, logger: logger)
    }
}
