import FlowdirCore
@testable import FlowdirIO
import Foundation
import FlowdirTestSupport
import Testing

/// The job-API client against a real HTTP server on loopback (medium tests):
/// the routes it calls, where its token goes, and how each way a request can go
/// wrong is classified (docs/templates-and-tools.md, `run.http`) and worded,
/// never with the token in it.
@Suite(.tags(.medium)) struct JobAPIClientTests {
    static let token = "r8_TestToken_5f2b9c0d41"

    /// A deadline far beyond any answer here: a test that is not about
    /// timeouts must not turn into one when the whole suite loads the machine.
    func client(_ port: Int, _ prefix: String = "", timeout: Double = 30, token: String? = Self.token) -> JobAPIClient {
        let base = "http://127.0.0.1:\(port)" + (prefix.isEmpty ? "" : "/\(prefix)") + "/v1"
        return JobAPIClient(endpoint: EndpointConfig(name: "gpu", url: base, requestTimeout: timeout), token: token,
                            clock: FlowdirClock.system.pinned(at: Timestamp(seconds: 1_800_000_000)))
    }

    /// The error a call throws, checked to hold no token in any of its words.
    func failure<T>(_ call: () async throws(JobAPIError) -> T, sourceLocation: Testing.SourceLocation = #_sourceLocation) async -> JobAPIError? {
        do {
            _ = try await call()
            Issue.record("no error", sourceLocation: sourceLocation)
            return nil
        } catch {
            let words = "\(error) \(String(reflecting: error)) \(error.hint(endpoint: "gpu") ?? "")"
            #expect(!words.contains(Self.token), "the token in: \(words)", sourceLocation: sourceLocation)
            #expect(error.isTransient || error.isPermanent || error.isOffline, sourceLocation: sourceLocation)
            #expect([error.isTransient, error.isPermanent, error.isOffline].filter { $0 }.count == 1, sourceLocation: sourceLocation)
            return error
        }
    }

    // MARK: Routes

    @Test func createByModelAndByVersionGoWhereReplicateSays() async throws {
        try await JobAPIClientTestServer.with { port, server in
            let c = client(port)
            let byModel = try await c.create(model: "acme/gen", version: nil, input: ["steps": .number(30), "flag": .bool(true)], webhook: nil)
            #expect(byModel.id == "p-model" && byModel.status == .starting && byModel.model == "acme/gen")
            #expect(byModel.input == .object(["steps": .number(30), "flag": .bool(true)]))
            #expect(byModel.urls?.get == "http://127.0.0.1:\(port)/v1/predictions/p-model")
            #expect(byModel.urls?.cancel == "http://127.0.0.1:\(port)/v1/predictions/p-model/cancel")
            let byVersion = try await c.create(model: nil, version: "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa",
                                               input: [:], webhook: "http://laptop:8701/hooks/gpu")
            #expect(byVersion.version == "5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa")
            #expect(byVersion.webhook == "http://laptop:8701/hooks/gpu")
            let seen = await server.seen
            #expect(seen.map { "\($0.method) \($0.path)" } == ["POST /v1/models/acme/gen/predictions", "POST /v1/predictions"])
            #expect(seen.allSatisfy { $0.authorization == "Bearer \(Self.token)" })
            // The body is Replicate's: input, and version only when by version.
            let first = try #require(JSONValue.parse(seen[0].body))
            #expect(first["version"] == nil && first["input"]?["steps"] == .number(30))
            let second = try #require(JSONValue.parse(seen[1].body))
            #expect(second["webhook_events_filter"] == .array([.string("start"), .string("completed")]))
        }
    }

    /// Replicate's sync mode: a create asks to be held for its job's end
    /// (`Prefer: wait=N`) only when given a wait; nothing else asks it.
    @Test func aCreateAsksToBeHeldOnlyWhenGivenAWait() async throws {
        try await JobAPIClientTestServer.with { port, server in
            let c = client(port)
            _ = try await c.create(model: "acme/gen", version: nil, input: [:], webhook: nil, wait: 25)
            _ = try await c.create(model: "acme/gen", version: nil, input: [:], webhook: nil, wait: 600)
            _ = try await c.create(model: "acme/gen", version: nil, input: [:], webhook: nil)
            _ = try await c.get("p1")
            #expect(await server.seen.map(\.prefer) == ["wait=25", "wait=60", nil, nil])
        }
    }

    @Test func getCancelAndListWalkThePages() async throws {
        try await JobAPIClientTestServer.with { port, server in
            let c = client(port)
            let p = try await c.get("p1")
            #expect(p.status == .succeeded && p.logs == "step 1\nstep 2\n")
            #expect(p.outputReference(at: "output.images[1]") == "http://127.0.0.1:\(port)/v1/files/out1")
            #expect(try await c.cancel("p1").status == .canceled)
            let first = try await c.list(cursor: nil)
            #expect(first.predictions.map(\.id) == ["p3", "p2"])
            #expect(first.predictions[1].error == #"{"message":"CUDA out of memory"}"#)
            let next = try #require(first.next)
            let second = try await c.list(cursor: next)
            #expect(second.predictions.map(\.id) == ["p1"] && second.next == nil)
            #expect(await server.seen.map { "\($0.method) \($0.path)" } == [
                "GET /v1/predictions/p1", "POST /v1/predictions/p1/cancel", "GET /v1/predictions", "GET /v1/predictions?cursor=page2",
            ])
        }
    }

    @Test func uploadSendsMultipartContentAndGivesTheFilesURL() async throws {
        try await JobAPIClientTestServer.with { port, server in
            let c = client(port)
            let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 1, 2, 255]
            let url = try await c.upload(bytes, filename: "in.png", contentType: "image/png")
            #expect(url == "http://127.0.0.1:\(port)/v1/files/f1")
            let body = try #require(await server.seen.first?.body)
            // The file's bytes go as they are, between the part's head and the closing boundary.
            #expect(body.firstRange(of: bytes) != nil)
        }
    }

    // MARK: The token

    @Test func theTokenGoesOnlyToTheEndpointsOwnServer() async throws {
        try await JobAPIClientTestServer.with { port, api in
            try await JobAPIClientTestServer.with { otherPort, other in
                let c = client(port)
                let own = try await c.fetchOutput("http://127.0.0.1:\(port)/v1/files/out0", limit: 1 << 20)
                let elsewhere = try await c.fetchOutput("http://127.0.0.1:\(otherPort)/v1/files/out1", limit: 1 << 20)
                // Same machine, another name: another host, so no token either.
                let otherName = try await c.fetchOutput("http://localhost:\(port)/v1/files/out2", limit: 1 << 20)
                #expect(own == Array("file out0".utf8) && elsewhere == Array("file out1".utf8) && otherName == Array("file out2".utf8))
                let onAPI = await api.seen
                #expect(onAPI.map(\.path) == ["/v1/files/out0", "/v1/files/out2"])
                #expect(onAPI[0].authorization == "Bearer \(Self.token)")
                #expect(onAPI[1].authorization == nil)
                #expect(await other.seen.map(\.authorization) == [nil])
            }
        }
    }

    @Test func aRedirectIsNotFollowedSoTheTokenStaysHome() async throws {
        try await JobAPIClientTestServer.with { port, api in
            try await JobAPIClientTestServer.with { otherPort, other in
                let c = client(port, "redirect")
                let to = "http://127.0.0.1:\(otherPort)/v1/predictions/p1"
                let error = await failure { () async throws(JobAPIError) in
                    try await c.fetchOutput("http://127.0.0.1:\(port)/redirect/v1/x?to=\(to)", limit: 1 << 20)
                }
                #expect(error == .http(status: 302, message: "redirected to \(to)", retryAfter: nil))
                #expect(error?.isPermanent == true && error?.hint(endpoint: "gpu")?.contains("follows no redirect") == true)
                #expect(await other.seen.isEmpty)
                #expect(await api.seen.count == 1)
            }
        }
    }

    @Test func dataURIsAreDecodedWithoutAsking() async throws {
        let c = client(RawSocket.freePort())
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0, 255]
        #expect(try await c.fetchOutput(JobAPIClient.dataURI(png, contentType: "image/png"), limit: 100) == png)
        #expect(try await c.fetchOutput("data:application/octet-stream,%89PNG%00%FF", limit: 100) == png)
        let big = await failure { () async throws(JobAPIError) in try await c.fetchOutput(JobAPIClient.dataURI(png, contentType: "image/png"), limit: 3) }
        #expect(big == .tooLarge(limit: 3))
    }

    // MARK: Permanent faults

    @Test func unauthorizedIsPermanentWithTheServersWordsAndAHintButNoToken() async throws {
        try await JobAPIClientTestServer.with { port, _ in
            let error = await failure { () async throws(JobAPIError) in try await client(port, "401").get("p1") }
            #expect(error?.isPermanent == true && error?.status == 401)
            // The server echoed the header; the client took the token out.
            #expect(error == .http(status: 401, message: "Invalid token: Bearer [token]", retryAfter: nil))
            #expect(error?.hint(endpoint: "gpu") == "check the token for endpoint 'gpu' in secrets.yaml (or FLOWDIR_TOKEN_GPU)")
        }
    }

    @Test(arguments: [("403", 403, "You do not have permission to use this model."), ("404", 404, "Not found."),
                      ("422", 422, "- input.steps: Must be less than or equal to 150"), ("500", 500, "Internal server error")])
    func clientErrorsAndServerBugsFailAtOnce(_ fault: String, _ status: Int, _ message: String) async throws {
        try await JobAPIClientTestServer.with { port, _ in
            let error = await failure { () async throws(JobAPIError) in
                try await client(port, fault).create(model: "acme/gen", version: nil, input: [:], webhook: nil)
            }
            #expect(error == .http(status: status, message: message, retryAfter: nil))
            #expect(error?.isPermanent == true)
            #expect(status == 500 || error?.hint(endpoint: "gpu") != nil)
        }
    }

    @Test(arguments: ["html", "html404"])
    func aPageThatIsNotTheAPIsJSONIsPermanent(_ fault: String) async throws {
        try await JobAPIClientTestServer.with { port, _ in
            let error = await failure { () async throws(JobAPIError) in try await client(port, fault).get("p1") }
            guard case .notAPI(let status, let snippet)? = error else {
                Issue.record("not notAPI: \(String(describing: error))")
                return
            }
            #expect(status == (fault == "html" ? 200 : 404) && snippet.contains("<html>") || snippet.contains("<!DOCTYPE"))
            #expect(error?.isPermanent == true && error?.hint(endpoint: "gpu")?.contains("Replicate-compatible") == true)
        }
    }

    @Test func aServerThatDoesNotSpeakHTTPIsNotTheAPI() async throws {
        // Not about timeouts: a deadline no loaded machine nears (the suite's first minute
        // starves the event loops on two cores; a 30 s one once passed before the banner was read).
        let c = client(RawSocket.serve(reply: Array("SSH-2.0-OpenSSH_9.2\r\n".utf8)), timeout: 600)
        let error = await failure { () async throws(JobAPIError) in try await c.get("p1") }
        #expect(error?.isPermanent == true, "\(String(describing: error))")
    }

    @Test func anOutputLargerThanTheLimitIsNotTriedAgain() async throws {
        try await JobAPIClientTestServer.with { port, _ in
            let c = client(port)
            let error = await failure { () async throws(JobAPIError) in try await c.fetchOutput("http://127.0.0.1:\(port)/v1/big", limit: 1000) }
            #expect(error == .tooLarge(limit: 1000) && error?.isPermanent == true)
            let whole = try await c.fetchOutput("http://127.0.0.1:\(port)/v1/big", limit: JobAPIClientTestServer.bigSize)
            #expect(whole.count == JobAPIClientTestServer.bigSize)
        }
    }

    // MARK: Transient faults

    @Test func tooManyRequestsSaysWhenInSeconds() async throws {
        try await JobAPIClientTestServer.with { port, _ in
            let error = await failure { () async throws(JobAPIError) in try await client(port, "429s").get("p1") }
            #expect(error?.isTransient == true && error?.retryAfter == 45)
            #expect(error?.description == "429 Request was throttled. Expected available in 45 seconds.")
        }
    }

    @Test func tooManyRequestsSaysWhenAsADate() async throws {
        try await JobAPIClientTestServer.with { port, _ in
            // The date is 60 s after the client's clock.
            let error = await failure { () async throws(JobAPIError) in try await client(port, "429d").get("p1") }
            #expect(error?.isTransient == true && error?.retryAfter == 60)
        }
    }

    @Test(arguments: [502, 503, 504])
    func aGatewaysPageForABusyServerIsTransient(_ status: Int) async throws {
        try await JobAPIClientTestServer.with { port, _ in
            let error = await failure { () async throws(JobAPIError) in
                try await client(port, String(status)).create(model: "acme/gen", version: nil, input: [:], webhook: nil)
            }
            #expect(error?.status == status && error?.isTransient == true)
            #expect(error?.description.contains("Gateway") == true)
        }
    }

    @Test func aConnectionClosedWithoutAnAnswerIsAReset() async throws {
        try await JobAPIClientTestServer.with { port, _ in
            let error = await failure { () async throws(JobAPIError) in try await client(port, "reset").get("p1") }
            guard case .reset? = error else {
                Issue.record("not a reset: \(String(describing: error))")
                return
            }
            #expect(error?.isTransient == true)
        }
    }

    @Test func aSlowServerTimesOut() async throws {
        try await JobAPIClientTestServer.with { port, _ in
            // The answer would come once the server stops: a timeout, not the answer, shows the deadline held.
            let error = await failure { () async throws(JobAPIError) in try await client(port, "slow", timeout: 0.5).get("p1") }
            #expect(error == .timeout(seconds: 0.5) && error?.isTransient == true)
        }
    }

    /// async-http-client's deadline ends with the head; the client's own covers the body too.
    @Test func aBodyThatStopsComingTimesOut() async throws {
        try await JobAPIClientTestServer.with { port, _ in
            // The rest of the body would come once the server stops: a timeout, not the answer, shows the deadline held.
            let error = await failure { () async throws(JobAPIError) in try await client(port, "stall", timeout: 0.5).get("p1") }
            #expect(error == .timeout(seconds: 0.5))
        }
    }

    // MARK: Offline

    @Test func nothingListeningIsOfflineAtOnce() async throws {
        // A deadline no loaded machine nears (the whole suite starts at once on two cores).
        let (port, held) = RawSocket.refusingPort()
        defer { close(held) }
        let c = client(port, timeout: 600)
        let error = await failure { () async throws(JobAPIError) in try await c.get("p1") }
        guard case .unreachable(let why)? = error else {
            Issue.record("not unreachable: \(String(describing: error))")
            return
        }
        // Known as refused, not as the deadline passing.
        #expect(error?.isOffline == true && why.contains("refused"), "\(why)")
    }

    @Test func aHostThatDoesNotResolveIsOffline() async throws {
        // Without a network the resolver answers only after its own retries
        // (~1-2 min here, loaded): the request's limit is set past that, so
        // what is tested is how a failed lookup is read, not who is faster.
        let c = JobAPIClient(endpoint: EndpointConfig(name: "gpu", url: "http://no-such-host.invalid/v1", requestTimeout: 900), token: Self.token)
        let error = await failure { () async throws(JobAPIError) in try await c.get("p1") }
        #expect(error?.isOffline == true, "\(String(describing: error))")
    }
}
