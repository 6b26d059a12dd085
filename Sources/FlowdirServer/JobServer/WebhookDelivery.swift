import AsyncHTTPClient
import FlowdirCore
import FlowdirIO
import Logging
import NIOCore

/// Calls predictions' webhooks: POST the prediction as JSON, signed as
/// Replicate signs them when the server has a webhook secret
/// (`WebhookSignature`), tried again after each of `delays` when the
/// receiver cannot be reached or answers other than 2xx. A prediction's
/// calls go one after another (its start never after its end); the same
/// `webhook-id` on every try of one call, as Standard Webhooks asks.
final class WebhookDelivery: Sendable {
    let secret: String?
    let delays: [Duration]
    let logger: Logger
    let http: HTTPClient
    /// The last call of each prediction still on its way.
    private let last = Locked<[String: Task<Void, Never>]>([:])

    init(secret: String?, delays: [Duration], logger: Logger, http: HTTPClient = .shared) {
        self.secret = secret
        self.delays = delays
        self.logger = logger
        self.http = http
    }

    /// Sends it after the prediction's calls before it; `last`: no more will come.
    func send(_ body: [UInt8], to url: String, prediction id: String, last isLast: Bool) {
        let (secret, delays, logger, http) = (self.secret, self.delays, self.logger, self.http)
        last.locked { calls in
            let before = calls[id]
            let call = Task {
                await before?.value
                await Self.deliver(body, to: url, id: id, secret: secret, delays: delays, logger: logger, http: http)
            }
            calls[id] = isLast ? nil : call
        }
    }

    static func deliver(_ body: [UInt8], to url: String, id: String, secret: String?, delays: [Duration], logger: Logger, http: HTTPClient) async {
        let messageID = "msg_" + RandomID.uuid().replacingOccurrences(of: "-", with: "")
        var why = ""
        for attempt in 0...delays.count {
            if attempt > 0 { try? await Task.sleep(for: delays[attempt - 1]) }
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "flowdir-jobserver")
            if let secret {
                let h = WebhookSignature.sign(body: body, id: messageID, now: SystemClock().now().seconds, secret: secret)
                request.headers.add(name: "webhook-id", value: h.id)
                request.headers.add(name: "webhook-timestamp", value: h.timestamp)
                request.headers.add(name: "webhook-signature", value: h.signature)
            }
            request.body = .bytes(ByteBuffer(bytes: body))
            do {
                let response = try await http.execute(request, timeout: .seconds(10))
                _ = try? await response.body.collect(upTo: 1 << 16)
                if (200..<300).contains(response.status.code) { return }
                why = "it answered \(response.status.code)"
            } catch {
                why = "\(error)"
            }
        }
        logger.warning("webhook not delivered after \(delays.count + 1) tries: \(why)", metadata: ["prediction": .string(id), "url": .string(url)])
    }
}
