import FlowdirCore
@testable import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// `endpoints:` and `concurrency:` in the config (docs/commands.md, "Config").
@Suite(.tags(.small)) struct EndpointConfigTests {
    func decode(_ text: String) -> Result<FlowdirConfig, Diagnostic> {
        ConfigDecoder.decode(Array(text.utf8), file: "/c/config.yaml", home: "/home/me")
    }

    @Test func anEndpointIsReadWithItsDurationsAndSizes() throws {
        let config = try decode("""
            concurrency: { remote: 1000, local: 3 }
            endpoints:
              gpu:
                url: http://gpu-box:8700/v1
                pollInterval: 2m
                maxRequestsPerMinute: 120
                inlineLimit: 1MB
                webhook: http://laptop:8701/hooks
                retryDelays: [1s, 4s, 4s]
                delayScale: 0.5
              replicate: { url: https://api.replicate.com/v1 }
            """).get()
        let gpu = try #require(config.endpoints["gpu"])
        #expect(gpu.url == "http://gpu-box:8700/v1" && gpu.pollInterval == 120 && gpu.maxRequestsPerMinute == 120)
        #expect(gpu.inlineLimit == 1 << 20 && gpu.webhook == "http://laptop:8701/hooks")
        #expect(gpu.retryDelays == [1, 4, 4] && gpu.delayScale == 0.5)
        let replicate = try #require(config.endpoints["replicate"])
        #expect(replicate.pollInterval == 10 && replicate.maxRequestsPerMinute == 600 && replicate.inlineLimit == 256 * 1024)
        #expect(replicate.retryDelays == [30, 120, 120])
        #expect(config.remoteConcurrency == 1000 && config.localConcurrency == 3)
    }

    @Test func aTokenInTheConfigIsRefusedWithWhereItGoes() {
        guard case .failure(let d) = decode("endpoints:\n  gpu: { url: http://x/v1, token: r8_secret }\n") else {
            Issue.record("a token in config.yaml was taken")
            return
        }
        #expect(d.message.contains("not a secret's place"))
        #expect(!d.message.contains("r8_secret"))
        #expect(d.hint?.contains("secrets.yaml (mode 0600)") == true && d.hint?.contains("FLOWDIR_TOKEN_GPU") == true)
        #expect(d.location?.line == 2)
    }

    @Test(arguments: ["endpoints:\n  gpu: { pollInterval: 10s }\n", "endpoints:\n  gpu: { url: ftp://x }\n",
                      "endpoints:\n  gpu: { url: http://x, pollInterval: soon }\n", "endpoints:\n  gpu: { url: http://x, maxRequestsPerMinute: 0 }\n",
                      "endpoints: [gpu]\n", "concurrency: { remote: 0 }\n", "concurrency: { gpu: 2 }\n"])
    func badValuesAreErrorsWithTheirPlace(_ text: String) {
        guard case .failure(let d) = decode(text) else {
            Issue.record("decoded: \(text)")
            return
        }
        #expect(d.location != nil)
    }
}

/// The rest of an endpoint's settings, and what is refused.
@Suite(.tags(.small)) struct EndpointSettingsTests {
    func decode(_ text: String) -> Result<FlowdirConfig, Diagnostic> {
        ConfigDecoder.decode(Array(text.utf8), file: "/c/config.yaml", home: "/home/me")
    }

    @Test func durationsInEveryFormAndSizesInBytes() throws {
        let config = try decode("""
            endpoints:
              gpu:
                url: https://api.replicate.com/v1
                pollInterval: PT10S
                requestTimeout: 45s
                firstBackoff: 0.5
                maxBackoff: 5m
                inlineLimit: 1048576
                retryDelays: [PT30S, 2m, 120]
            """).get()
        let gpu = try #require(config.endpoints["gpu"])
        #expect(gpu.pollInterval == 10 && gpu.requestTimeout == 45 && gpu.firstBackoff == 0.5 && gpu.maxBackoff == 300)
        #expect(gpu.inlineLimit == 1 << 20 && gpu.retryDelays == [30, 120, 120])
        #expect(gpu.name == "gpu" && gpu.tokenVariable == "FLOWDIR_TOKEN_GPU")
    }

    @Test func aWebhookSecretInTheConfigIsRefusedWithItsOwnVariable() throws {
        guard case .failure(let d) = decode("endpoints:\n  gpu:\n    url: http://x/v1\n    webhookSecret: whsec_abc\n") else {
            Issue.record("a webhook secret in config.yaml was taken")
            return
        }
        #expect(!d.message.contains("whsec_abc") && d.message.contains("`webhookSecret`"))
        #expect(d.hint?.contains("FLOWDIR_WEBHOOK_SECRET_GPU") == true && d.hint?.contains("secrets.yaml") == true)
        #expect(d.location?.line == 4 && d.location?.column == 5)
    }

    @Test(arguments: ["http://", "https:///v1", "http://:8700/v1", "http://gpu box/v1", "gpu-box:8700/v1"])
    func aURLWithoutAHostIsRefused(_ url: String) {
        guard case .failure(let d) = decode("endpoints:\n  gpu: { url: \"\(url)\" }\n") else {
            Issue.record("took \(url)")
            return
        }
        #expect(d.message.contains("needs `url:`") && d.location?.line == 2)
    }

    /// How long a create is held for its job's end: 25 s unless set, 0s
    /// never, at most 60 s, and always short of `requestTimeout`.
    @Test func syncWaitIsReadAndKeptShortOfTheRequestTimeout() throws {
        func endpoint(_ settings: String) throws -> EndpointConfig {
            try #require(try decode("endpoints:\n  gpu: { url: http://x/v1\(settings) }\n").get().endpoints["gpu"])
        }
        #expect(try endpoint("").syncWait == 25 && endpoint("").createWait == 25)
        #expect(try endpoint(", syncWait: 0s").createWait == 0)
        #expect(try endpoint(", syncWait: 1m, requestTimeout: 2m").createWait == 60)
        #expect(try endpoint(", syncWait: 1m").createWait == 25)
        #expect(try endpoint(", requestTimeout: 4s").createWait == 2)
        #expect(try endpoint(", requestTimeout: 0.5s").createWait == 0)
        #expect(try endpoint(", syncWait: 1.5s").createWait == 1)
        guard case .failure(let d) = decode("endpoints:\n  gpu:\n    url: http://x/v1\n    syncWait: 2m\n") else {
            Issue.record("took a wait past 60s")
            return
        }
        #expect(d.location?.line == 4 && d.message.contains("0s (never wait) to 60s"), "\(d)")
    }

    @Test(arguments: ["requestTimeout: 0s", "inlineLimit: lots", "retryDelays: []", "delayScale: 0", "webhook: laptop:8701", "syncWait: -1s", "syncWait: soon"])
    func aBadSettingIsAnErrorAtItsPlace(_ setting: String) {
        guard case .failure(let d) = decode("endpoints:\n  gpu:\n    url: http://x/v1\n    \(setting)\n") else {
            Issue.record("took \(setting)")
            return
        }
        #expect(d.location?.line == 4, "\(d)")
    }
}
