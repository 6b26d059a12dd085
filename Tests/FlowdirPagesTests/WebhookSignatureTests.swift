import FlowdirCore
import FlowdirIO
import FlowdirPages
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.medium)) struct WebhookSignatureTests {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    let body = Array(#"{"id":"p1","status":"succeeded"}"#.utf8)

    @Test func aSignedBodyIsBelievedWithinFiveMinutes() {
        let h = WebhookSignature.sign(body: body, id: "msg_1", now: 1_800_000_000, secret: secret)
        #expect(h.signature.hasPrefix("v1,"))
        let ok = WebhookSignature.verify(body: body, id: h.id, timestamp: h.timestamp, signature: h.signature, secret: secret, now: 1_800_000_250)
        #expect((try? ok.get()) != nil)
        // Several signatures, one of them right (a secret being rotated).
        let both = WebhookSignature.verify(body: body, id: h.id, timestamp: h.timestamp, signature: "v1,AAAA " + h.signature,
                                           secret: secret, now: 1_800_000_000)
        #expect((try? both.get()) != nil)
    }

    /// The Standard Webhooks specification's own example, as Replicate signs.
    /// Found by the webhook fuzz target: the list was split by Characters, and
    /// a space before a combining mark is none: the signature before it was lost.
    @Test func signaturesAreSplitAtEverySpaceByte() {
        let body = Array("{}".utf8)
        let h = WebhookSignature.sign(body: body, id: "msg_1", now: 1_800_000_000, secret: secret)
        let both = WebhookSignature.verify(body: body, id: h.id, timestamp: h.timestamp, signature: h.signature + " \u{0301}v1,AAAA",
                                           secret: secret, now: 1_800_000_000)
        #expect((try? both.get()) != nil)
    }

    @Test func theSpecificationsExampleSignsTheSame() {
        let h = WebhookSignature.sign(body: Array(#"{"test": 2432232314}"#.utf8), id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
                                      now: 1_614_265_330, secret: secret)
        #expect(h.signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func anythingElseIsNot() {
        let h = WebhookSignature.sign(body: body, id: "msg_1", now: 1_800_000_000, secret: secret)
        func check(_ b: [UInt8] = Array(#"{"id":"p1","status":"succeeded"}"#.utf8), id: String? = "msg_1", timestamp: String? = "1800000000",
                   signature: String? = nil, secret s: String? = nil, now: Double = 1_800_000_000) -> WebhookSignature.Rejection? {
            if case .failure(let r) = WebhookSignature.verify(body: b, id: id, timestamp: timestamp, signature: signature ?? h.signature,
                                                              secret: s ?? secret, now: now) { return r }
            return nil
        }
        #expect(check() == nil)
        #expect(check(Array(#"{"id":"p1","status":"failed"}"#.utf8)) == .noMatch)
        #expect(check(id: "msg_2") == .noMatch)
        #expect(check(secret: "whsec_b3RoZXI=") == .noMatch)
        #expect(check(now: 1_800_000_301) == .stale(seconds: 301))
        #expect(check(id: nil) == .missingHeaders)
        #expect(check(signature: "v2," + h.signature.dropFirst(3)) == .noMatch)
    }

    /// issue #41: `webhook-timestamp: nan` (or `inf`, `1e20`) trapped in
    /// `Int(now - t)` and stopped the watcher, no signature needed. The
    /// timestamp is whole seconds, digits only; anything else is refused.
    @Test(arguments: ["nan", "NaN", "inf", "-inf", "infinity", "1e20", "1e300", "-1", "+1800000000", "1800000000.5", "0x6B49D200",
                      "99999999999999999999", "9223372036854775807", " 1800000000", "1800000000 ", "", "١٨٠٠٠٠٠٠٠٠"])
    func aTimestampThatIsNotWholeSecondsIsRefused(_ timestamp: String) {
        let r = WebhookSignature.verify(body: body, id: "msg_1", timestamp: timestamp, signature: "v1,AAAA", secret: secret, now: 1_800_000_000)
        #expect(r.failure == .malformedTimestamp, "\(timestamp)")
    }

    @Test func farTimestampsAndClocksAreStaleNotATrap() {
        for (t, now) in [("999999999999", 0.0), ("0", 1e300), ("1800000000", .nan), ("1800000000", .infinity), ("1800000000", -1e300)] {
            let r = WebhookSignature.verify(body: body, id: "msg_1", timestamp: t, signature: "v1,AAAA", secret: secret, now: now)
            guard case .stale? = r.failure else {
                Issue.record("\(t) at \(now): \(String(describing: r.failure))")
                continue
            }
        }
    }

    @Test func oddHeadersAreRefused() {
        let h = WebhookSignature.sign(body: body, id: "msg_1", now: 1_800_000_000, secret: secret)
        func reject(id: String = "msg_1", signature: String) -> WebhookSignature.Rejection? {
            WebhookSignature.verify(body: body, id: id, timestamp: h.timestamp, signature: signature, secret: secret, now: 1_800_000_000).failure
        }
        #expect(reject(id: String(repeating: "a", count: 300), signature: h.signature) == .malformedHeaders)
        #expect(reject(id: "msg\n1", signature: h.signature) == .malformedHeaders)
        #expect(reject(id: "", signature: h.signature) == .malformedHeaders)
        #expect(reject(signature: String(repeating: "v1,AAAA ", count: 1000) + h.signature) == .malformedHeaders)
        // Only the first 16 signatures are tried.
        #expect(reject(signature: Array(repeating: "v1,AAAA", count: 16).joined(separator: " ") + " " + h.signature) == .noMatch)
    }

    // MARK: Replays

    @Test func aWebhookIdIsBelievedOnce() {
        var seen = WebhookReplaySet()
        let h = WebhookSignature.sign(body: body, id: "msg_1", now: 1_800_000_000, secret: secret)
        func check(at now: Double, endpoint: String = "gpu") -> WebhookSignature.Rejection? {
            WebhookCheck.check(body: body, id: h.id, timestamp: h.timestamp, signature: h.signature, endpoint: endpoint, secret: secret,
                               now: now, seen: &seen).failure
        }
        #expect(check(at: 1_800_000_000) == nil)
        #expect(check(at: 1_800_000_001) == .replayed)
        #expect(check(at: 1_800_000_300) == .replayed)
        #expect(check(at: 1_800_000_301) == .stale(seconds: 301))
        // Another endpoint's ids are its own.
        #expect(check(at: 1_800_000_002, endpoint: "cpu") == nil)
        // A forged delivery never takes a place among the remembered.
        let forged = WebhookCheck.check(body: body, id: "msg_9", timestamp: h.timestamp, signature: "v1,AAAA", endpoint: "gpu",
                                        secret: secret, now: 1_800_000_000, seen: &seen)
        #expect(forged.failure == .noMatch)
        #expect(seen.count == 2)
    }

    @Test func theRememberedAreBoundedAndNeverForgottenEarly() {
        var seen = WebhookReplaySet(capacity: 2)
        let t: Int64 = 1_800_000_000
        #expect(seen.admit(endpoint: "gpu", id: "a", timestamp: t, now: t).failure == nil)
        #expect(seen.admit(endpoint: "gpu", id: "b", timestamp: t, now: t).failure == nil)
        // Full of live ids: the new one is refused, none forgotten (its replay would get in).
        #expect(seen.admit(endpoint: "gpu", id: "c", timestamp: t, now: t + 10).failure == .tooMany)
        #expect(seen.admit(endpoint: "gpu", id: "a", timestamp: t, now: t + 10).failure == .replayed)
        // Once theirs are past the tolerance, room is made.
        #expect(seen.admit(endpoint: "gpu", id: "c", timestamp: t + 301, now: t + 301).failure == nil)
        #expect(seen.count <= 2)
    }

    // MARK: Where it listens

    @Test func itListensOnlyWhereTheWebhookURLSays() {
        let gpu = EndpointConfig(name: "gpu", url: "http://gpu:1/v1", webhook: "http://127.0.0.1:8701/hooks")
        var (plan, notes) = WebhookPlan.make(endpoints: [gpu], hasSecret: { _ in true }, listen: nil, local: { _ in [] })
        #expect(plan == WebhookPlan(host: "127.0.0.1", port: 8701, routes: ["/hooks/gpu": "gpu"]) && notes.isEmpty)
        // A name of this machine: its address, not every interface.
        var laptop = gpu
        laptop.webhook = "http://laptop:8701/hooks/"
        (plan, _) = WebhookPlan.make(endpoints: [laptop], hasSecret: { _ in true }, listen: nil,
                                     local: { $0 == "laptop" ? ["192.168.1.5"] : [] })
        #expect(plan == WebhookPlan(host: "192.168.1.5", port: 8701, routes: ["/hooks/gpu": "gpu"]))
        // Another machine's name (a port forward): not without `webhookListen`.
        (plan, notes) = WebhookPlan.make(endpoints: [laptop], hasSecret: { _ in true }, listen: nil, local: { _ in [] })
        #expect(plan == nil)
        #expect(notes.first?.contains("webhookListen: 0.0.0.0") == true, "\(notes)")
        (plan, _) = WebhookPlan.make(endpoints: [laptop], hasSecret: { _ in true }, listen: "0.0.0.0", local: { _ in [] })
        #expect(plan?.host == "0.0.0.0")
    }

    @Test func noSecretNoReceiver() {
        let gpu = EndpointConfig(name: "gpu", url: "http://gpu:1/v1", webhook: "http://127.0.0.1:8701/hooks")
        let cpu = EndpointConfig(name: "cpu", url: "http://cpu:1/v1", webhook: "http://127.0.0.1:8701/hooks")
        var (plan, notes) = WebhookPlan.make(endpoints: [gpu], hasSecret: { _ in false }, listen: nil, local: { _ in [] })
        #expect(plan == nil)
        #expect(notes.count == 1 && notes[0].contains("webhookSecret") && notes[0].contains("FLOWDIR_WEBHOOK_SECRET_GPU"), "\(notes)")
        (plan, notes) = WebhookPlan.make(endpoints: [gpu, cpu], hasSecret: { $0 == "cpu" }, listen: nil, local: { _ in [] })
        #expect(plan?.routes == ["/hooks/cpu": "cpu"])
        #expect(notes.count == 1 && notes[0].contains("'gpu'"))
    }

    // MARK: The receiver

    func receiver(_ delivered: Locked<[String]>) -> some ApplicationProtocol {
        WebhookReceiver(host: "127.0.0.1", port: 0, routes: ["/hooks/gpu": ("gpu", secret)], logger: Logger(label: "test")) { endpoint, p in
            delivered.locked { $0.append("\(endpoint):\(p.id)") }
        }.application()
    }

    func headers(_ h: WebhookSignature.Headers) -> HTTPFields {
        [HTTPField.Name("webhook-id")!: h.id, HTTPField.Name("webhook-timestamp")!: h.timestamp,
         HTTPField.Name("webhook-signature")!: h.signature, .contentType: "application/json"]
    }

    @Test func theReceiverTakesOnlySignedDeliveriesOnItsPathOnce() async throws {
        let delivered = Locked<[String]>([])
        let prediction = Array(#"{"id":"p1","status":"succeeded","output":"x"}"#.utf8)
        let signed = WebhookSignature.sign(body: prediction, id: "msg_1", now: SystemClock().now().seconds, secret: secret)
        try await receiver(delivered).test(.live) { client in
            // Unsigned, with a timestamp that once stopped the watcher: refused, and it goes on.
            for t in ["nan", "inf", "1e20"] {
                var h = headers(signed)
                h[HTTPField.Name("webhook-timestamp")!] = t
                let r = try await client.execute(uri: "/hooks/gpu", method: .post, headers: h, body: ByteBuffer(bytes: prediction))
                #expect(r.status == .unauthorized, "\(t)")
            }
            // Only the configured path: not another ending in /gpu.
            for path in ["/x/hooks/gpu", "/gpu", "/hooks/gpu/", "/hooks/cpu"] {
                let r = try await client.execute(uri: path, method: .post, headers: headers(signed), body: ByteBuffer(bytes: prediction))
                #expect(r.status == .notFound, "\(path)")
            }
            // A body far over what a prediction is.
            let big = try await client.execute(uri: "/hooks/gpu", method: .post, headers: headers(signed),
                                               body: ByteBuffer(bytes: [UInt8](repeating: 0x20, count: WebhookReceiver.bodyLimit + 1)))
            #expect(big.status == .contentTooLarge)
            // The real one, then its replay: acted on once.
            let ok = try await client.execute(uri: "/hooks/gpu", method: .post, headers: headers(signed), body: ByteBuffer(bytes: prediction))
            #expect(ok.status == .ok)
            let again = try await client.execute(uri: "/hooks/gpu", method: .post, headers: headers(signed), body: ByteBuffer(bytes: prediction))
            #expect(again.status == .ok)
        }
        #expect(delivered.locked { $0 } == ["gpu:p1"])
    }
}

extension Result {
    var failure: Failure? { if case .failure(let f) = self { f } else { nil } }
}
