#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
@testable import FlowdirJobServer
import Foundation
import FlowdirTestSupport
import Testing

/// Where a prediction's webhook may go (docs/security.md): never to
/// link-local (cloud metadata), multicast, unspecified or reserved
/// addresses, to loopback only when the job server listens on loopback
/// only, never by a redirect; LAN addresses are the usual receivers.
@Suite(.tags(.medium)) struct WebhookTargetTests {
    static let refusedAnywhere = [
        "http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/hook", "http://[fe80::1%25eth0]/hook", "http://224.0.0.1/hook",
        "http://0.0.0.0:8080/hook", "http://[::]/hook", "http://[::ffff:169.254.169.254]/hook", "http://[fd00:ec2::254]/latest",
        "http://[64:ff9b::a9fe:a9fe]/", "http://255.255.255.255/", "http://2852039166/", "http://0xa9.0xfe.0xa9.0xfe/",
        "ftp://10.0.0.5/hook", "file:///etc/passwd", "http://user:secret@10.0.0.5/hook", "http:///hook", "gopher://10.0.0.5:70/",
    ]
    static let loopback = ["http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://localhost.:9/hook", "http://127.1:9/hook",
                           "http://[::1]:9/hook", "http://app.localhost:9/hook", "http://2130706433:9/hook"]
    static let lan = ["http://10.0.0.5:9/hook", "http://192.168.1.20/hook", "https://172.16.4.2:8443/hook?x=1", "http://[fd12:3456::7]:9/"]

    func create(_ h: Harness, webhook: String) async throws -> Harness.Answer {
        try await h.request(.POST, "/v1/models/tools/Work/predictions", json: ["input": ["text": "x"], "webhook": .string(webhook)])
    }

    @Test func internalAddressesAreRefusedWhenThePredictionIsMade() async throws {
        let h = try await Harness()
        for url in Self.refusedAnywhere {
            let a = try await create(h, webhook: url)
            #expect(a.status == 422 && a.json["detail"]?.stringValue?.contains("webhook") == true, "\(url): \(a.status) \(a.text)")
        }
        // This one listens on loopback only: a receiver on this machine is fine, as one on the LAN.
        for url in Self.loopback + Self.lan {
            #expect(try await create(h, webhook: url).status == 201, "\(url)")
        }
        #expect(try await h.request(.GET, "/v1/_stats").json["created"]?.number == Double(Self.loopback.count + Self.lan.count))
    }

    @Test func aServerReachableFromTheLANSendsNoWebhookToItsOwnMachine() async throws {
        let h = try await Harness { $0.host = "0.0.0.0" }
        for url in Self.loopback + Self.refusedAnywhere {
            let a = try await create(h, webhook: url)
            #expect(a.status == 422, "\(url): \(a.status) \(a.text)")
        }
        for url in Self.lan { #expect(try await create(h, webhook: url).status == 201, "\(url)") }
    }

    /// A name is checked on the addresses it has when the call is made: this
    /// machine's own name (which resolves to loopback here) passes the check
    /// at create, and is refused when the webhook would be sent.
    @Test func aNameIsCheckedOnWhatItResolvesToWhenTheCallIsMade() async throws {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let resolved = try WebhookTarget.lookUp(host).get()
        try #require(resolved.allSatisfy { $0.kind == .loopback }, "this machine's name \(host) resolves to \(resolved), not loopback only")
        let receiver = try await Receiver()
        let h = try await Harness { $0.host = "0.0.0.0" }
        let url = "http://\(host):\(receiver.port)/hook"
        let a = try await create(h, webhook: url)
        #expect(a.status == 201, "\(a.text)")
        try await h.wait(try #require(a.json["id"]?.stringValue))
        // Nothing to wait on for a call that is not made: long past when it would have come.
        try await Task.sleep(for: .seconds(2))
        #expect(receiver.calls.locked { $0.count } == 0)
        await receiver.stop()
    }

    @Test func aRedirectIsNotFollowedSoTheSignatureGoesNowhereElse() async throws {
        let elsewhere = try await Receiver()
        let redirecting = try await Receiver(redirectTo: elsewhere.url)
        let h = try await Harness()
        let a = try await h.request(.POST, "/v1/models/tools/Work/predictions",
                                    json: ["input": ["text": "x"], "webhook": .string(redirecting.url), "webhook_events_filter": ["completed"]])
        #expect(a.status == 201)
        try await h.wait(try #require(a.json["id"]?.stringValue))
        let calls = try await redirecting.waitFor(1)
        #expect(calls.count == 1 && calls[0].headers["webhook-signature"] != nil)
        // A failed delivery, not tried again (the retries come 0.2 s and 0.4 s apart here).
        try await Task.sleep(for: .seconds(2))
        #expect(redirecting.calls.locked { $0.count } == 1)
        #expect(elsewhere.calls.locked { $0.count } == 0)
        await redirecting.stop()
        await elsewhere.stop()
    }

    @Test func addressesAreClassifiedAsTheKernelRoutesThem() {
        let kinds: [(String, NetAddress.Kind)] = [
            ("127.0.0.1", .loopback), ("127.255.0.9", .loopback), ("::1", .loopback), ("::ffff:127.0.0.1", .loopback),
            ("169.254.169.254", .linkLocal), ("fe80::1", .linkLocal), ("febf::1", .linkLocal), ("::ffff:169.254.1.1", .linkLocal),
            ("fd00:ec2::254", .metadata), ("224.0.0.251", .multicast), ("ff02::1", .multicast), ("0.0.0.0", .unspecified),
            ("0.1.2.3", .unspecified), ("::", .unspecified), ("240.0.0.1", .reserved), ("255.255.255.255", .reserved),
            ("10.1.2.3", .ordinary), ("192.168.0.1", .ordinary), ("172.16.0.1", .ordinary), ("8.8.8.8", .ordinary),
            ("fd12::1", .ordinary), ("2001:db8::1", .ordinary), ("fec0::1", .ordinary),
        ]
        for (text, kind) in kinds {
            #expect(NetAddress(text)?.kind == kind, "\(text)")
        }
        #expect(NetAddress("example.org") == nil && NetAddress("127.1") == nil)
        #expect(WebhookTarget.numeric("127.1") == .v4(0x7F00_0001) && WebhookTarget.numeric("example.org") == nil)
    }
}
