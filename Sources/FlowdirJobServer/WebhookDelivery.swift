import AsyncHTTPClient
import FlowdirCore
import FlowdirIO
import Logging
import NIOCore

/// Calls predictions' webhooks: POST the prediction as JSON, signed as
/// Replicate signs them when the server has a webhook secret
/// (`WebhookSignature`), tried again after each of `delays` when the
/// receiver cannot be reached or answers other than 2xx or 3xx. A prediction's calls
/// go one after another (its start never after its end); the same
/// `webhook-id` on every try of one call, as Standard Webhooks asks.
///
/// Where a call may go is checked on the addresses its host has at that
/// moment (`WebhookTarget`), and redirects are never followed: a 3xx is a
/// failed delivery, so the signature headers never go anywhere else.
final class WebhookDelivery: Sendable {
    let secret: String?
    let delays: [Duration]
    let logger: Logger
    let allowLoopback: Bool
    /// Follows no redirects (`JobAPIClient.http`).
    let http: HTTPClient
    let clock: FlowdirClock
    /// The last call of each prediction still on its way.
    private let last = Locked<[String: Task<Void, Never>]>([:])

    init(secret: String?, delays: [Duration], logger: Logger, allowLoopback: Bool, http: HTTPClient = JobAPIClient.http,
         clock: FlowdirClock = .system) {
        self.clock = clock
        self.secret = secret
        self.delays = delays
        self.logger = logger
        self.allowLoopback = allowLoopback
        self.http = http
    }

    /// Sends it after the prediction's calls before it; `last`: no more will come.
    func send(_ body: [UInt8], to url: String, prediction id: String, last isLast: Bool) {
        last.locked { calls in
            let before = calls[id]
            let call = Task {
                await before?.value
                await self.deliver(body, to: url, id: id)
            }
            calls[id] = isLast ? nil : call
        }
    }

    enum Outcome { case delivered, tryAgain(String), failed(String) }

    func deliver(_ body: [UInt8], to url: String, id: String) async {
        let messageID = "msg_" + RandomID.uuid().replacingOccurrences(of: "-", with: "")
        var why = ""
        for attempt in 0...delays.count {
            if attempt > 0 { try? await clock.sleep(for: delays[attempt - 1]) }
            switch await call(body, url: url, messageID: messageID) {
            case .delivered: return
            case .tryAgain(let w): why = w
            case .failed(let w):
                logger.warning("webhook not delivered: \(w)", metadata: ["prediction": .string(id), "url": .string(Self.shown(url))])
                return
            }
        }
        logger.warning("webhook not delivered after \(delays.count + 1) tries: \(why)", metadata: ["prediction": .string(id), "url": .string(Self.shown(url))])
    }

    func call(_ body: [UInt8], url: String, messageID: String) async -> Outcome {
        let target: WebhookTarget
        let addresses: [NetAddress]
        do {
            target = try WebhookTarget.parse(url, allowLoopback: allowLoopback)
            addresses = try await target.resolve(allowLoopback: allowLoopback)
        } catch {
            // A name that cannot be looked up now may be later; a refused address stays refused.
            return "\(error)".hasPrefix("cannot look up") ? .tryAgain("\(error)") : .failed("\(error)")
        }
        let (connectTo, hostHeader) = target.request(to: addresses[0])
        var request = HTTPClientRequest(url: connectTo)
        request.method = .POST
        if let hostHeader { request.headers.add(name: "Host", value: hostHeader) }
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "flowdir-jobserver")
        if let secret {
            let h = WebhookSignature.sign(body: body, id: messageID, now: clock.now().seconds, secret: secret)
            request.headers.add(name: "webhook-id", value: h.id)
            request.headers.add(name: "webhook-timestamp", value: h.timestamp)
            request.headers.add(name: "webhook-signature", value: h.signature)
        }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await http.execute(request, timeout: .seconds(10))
            _ = try? await response.body.collect(upTo: 1 << 16)
            let status = Int(response.status.code)
            if (200..<300).contains(status) { return .delivered }
            if (300..<400).contains(status) {
                return .failed("it answered \(status), a redirect, which is not followed (the webhook's URL must be the receiver itself)")
            }
            return .tryAgain("it answered \(status)")
        } catch {
            return .tryAgain("\(error)")
        }
    }

    /// A URL for the log: without its query, which may hold a secret of the receiver's.
    static func shown(_ url: String) -> String { String(url.prefix { $0 != "?" }.prefix(300)) }
}
