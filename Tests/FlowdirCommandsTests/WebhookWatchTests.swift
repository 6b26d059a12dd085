#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// The watcher's webhook receiver end to end (issue #41): whoever reaches
/// its port cannot stop it, and it listens only as the config says.
@Suite(.tags(.large), Tier.notQuick) struct WebhookWatchTests {
    /// `curl` POSTs to the receiver; the HTTP status it got.
    func post(_ url: String, headers: [String], body: String = #"{"id":"x","status":"succeeded"}"#) throws -> String {
        var args = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-X", "POST", url, "--data-binary", body]
        for h in headers { args += ["-H", h] }
        return try CommandRunner.run("/usr/bin/curl", args).stdout
    }

    @Test func hostileTimestampsDoNotStopTheWatcher() async throws {
        try await offPool {
            let port = try FreePort.pick()
            // Sent without waiting, so the end comes by the webhook, not with the create's answer.
            let s = try RemoteJobSetup(endpoint: "pollInterval: 10s, syncWait: 0s", webhookPort: port,
                                       nodes: "  - { id: r, kind: Remote, params: { text: hooked, sleep: 1 } }\n")
            let inst = try s.new()
            try s.startWatch()
            try s.waitFor("the receiver") { (try? String(contentsOfFile: s.watchLog, encoding: .utf8))?.contains("receiving webhooks") ?? false }
            let url = "http://127.0.0.1:\(port)/hooks/gpu"
            for t in ["nan", "inf", "-inf", "1e20", "99999999999999999999"] {
                let status = try post(url, headers: ["webhook-id: msg_1", "webhook-timestamp: \(t)", "webhook-signature: v1,AAAA"])
                #expect(status == "401", "\(t): \(status)")
            }
            #expect(try post("http://127.0.0.1:\(port)/anything/gpu", headers: []) == "404")
            #expect(s.watch?.isRunning == true)
            // And it still takes the real ones: the job's end arrives by webhook (polling is every 10 s).
            try s.waitFor("r to succeed") { s.state(inst, "r") == "succeeded" }
            #expect(s.watch?.isRunning == true)
            s.stopWatch()
            let log = try String(contentsOfFile: s.watchLog, encoding: .utf8)
            #expect(log.contains("webhook-timestamp is not whole seconds"), "\(log)")
            #expect(!log.contains("Fatal error"))
        }
    }

    @Test func withoutASecretNothingListens() async throws {
        try await offPool {
            let port = try FreePort.pick()
            let s = try RemoteJobSetup(webhookPort: port)
            try s.dir.write("secrets.yaml", "endpoints:\n  gpu: { token: \(RemoteJobSetup.token) }\n")
            chmod(s.dir.path + "/secrets.yaml", 0o600)
            try s.startWatch()
            let log = try String(contentsOfFile: s.watchLog, encoding: .utf8)
            #expect(log.contains("no webhook secret") && log.contains("FLOWDIR_WEBHOOK_SECRET_GPU"), "\(log)")
            #expect(!log.contains("receiving webhooks"))
            #expect(try post("http://127.0.0.1:\(port)/hooks/gpu", headers: []) == "000")  // nothing there
            s.stopWatch()
        }
    }
}
