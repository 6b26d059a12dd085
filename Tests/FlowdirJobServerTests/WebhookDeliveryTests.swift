import FlowdirCore
import FlowdirIO
import FlowdirJobServer
import Foundation
import FlowdirTestSupport
import Testing

/// A prediction's webhook, called as Replicate calls it: signed, and
/// tried again when it does not get through.
@Suite(.tags(.medium)) struct WebhookDeliveryTests {
    /// Why `verify` does not believe it; nil: it does.
    func rejection(_ call: Receiver.Call, body: [UInt8]? = nil, secret: String = Harness.secret) -> WebhookSignature.Rejection? {
        let r = WebhookSignature.verify(body: body ?? call.body, id: call.headers["webhook-id"], timestamp: call.headers["webhook-timestamp"],
                                signature: call.headers["webhook-signature"], secret: secret, now: SystemClock().now().seconds)
        if case .failure(let why) = r { return why }
        return nil
    }

    @Test func startAndCompletedAreSentSignedInOrder() async throws {
        let receiver = try await Receiver()
        let h = try await Harness()
        let p = try await h.create("tools/Work", ["text": "hooked"], webhook: receiver.url)
        let calls = try await receiver.waitFor(2)
        #expect(calls.count == 2)
        let statuses = calls.map { JSONValue.parse($0.body)?["status"]?.stringValue }
        #expect(statuses == ["processing", "succeeded"])
        let last = try #require(calls.last)
        let body = try #require(JSONValue.parse(last.body))
        #expect(body["id"] == p["id"] && body["output"]?.stringValue?.hasPrefix(h.base + "/v1/files/") == true)
        for call in calls {
            #expect(rejection(call) == nil)
            #expect(call.headers["webhook-signature"]?.hasPrefix("v1,") == true)
        }
        // Tampered with, or checked with another secret: not believed.
        var tampered = last.body
        tampered[tampered.count / 2] ^= 1
        #expect(rejection(last, body: tampered) == .noMatch)
        #expect(rejection(last, secret: "whsec_b3RoZXItc2VjcmV0") == .noMatch)
        await receiver.stop()
    }

    @Test func aFilterChoosesTheEvents() async throws {
        let receiver = try await Receiver()
        let h = try await Harness()
        let p = try await h.create("tools/Work", ["text": "x"], webhook: receiver.url, extra: ["webhook_events_filter": ["completed"]])
        try await h.wait(try #require(p["id"]?.stringValue))
        // A prediction's calls go in order, its start first: its end, first to come, says the start was not sent.
        let calls = try await receiver.waitFor(1)
        #expect(JSONValue.parse(calls[0].body)?["status"] == "succeeded")
        await receiver.stop()
    }

    @Test func aWebhookThatFailsIsTriedAgainWithTheSameID() async throws {
        let receiver = try await Receiver(failFirst: 2)
        let h = try await Harness()
        _ = try await h.create("tools/Work", ["text": "x"], webhook: receiver.url, extra: ["webhook_events_filter": ["completed"]])
        let calls = try await receiver.waitFor(3)
        #expect(calls.count == 3)
        #expect(Set(calls.map { $0.headers["webhook-id"] ?? "" }).count == 1)
        #expect(calls.allSatisfy { rejection($0) == nil })
        await receiver.stop()
    }

    /// Replicate's `GET /v1/webhooks/default/secret`, which its clients use to verify.
    @Test func theSecretIsGivenToTokenHoldersOnly() async throws {
        let h = try await Harness()
        #expect(try await h.request(.GET, "/v1/webhooks/default/secret").json["key"]?.stringValue == Harness.secret)
        #expect(try await h.request(.GET, "/v1/webhooks/default/secret", token: nil).status == 401)
    }
}
