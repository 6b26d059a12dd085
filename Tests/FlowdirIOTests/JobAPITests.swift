#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Testing

/// The job-API client's pure parts: data URIs, where an output is, how a
/// failure is classified and worded; and secrets.yaml.
@Suite(.tags(.medium)) struct JobAPITests {
    @Test func dataURIsGoBothWays() {
        let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0, 255, 10]
        let uri = JobAPIClient.dataURI(bytes, contentType: "image/png")
        #expect(uri.hasPrefix("data:image/png;base64,"))
        #expect(JobAPIClient.decodeDataURI(uri) == bytes)
        #expect(JobAPIClient.decodeDataURI("data:text/plain,hello%20there") == Array("hello there".utf8))
        #expect(JobAPIClient.decodeDataURI("http://x/y") == nil)
    }

    @Test func outputsAreFoundWhereTheToolSays() throws {
        let json = try #require(JSONValue.parse(Array(#"{"id":"p","status":"succeeded","output":{"image":"u1","images":["a","b"]}}"#.utf8)))
        let p = try #require(Prediction(json: json))
        #expect(p.outputReference(at: "output.image") == "u1")
        #expect(p.outputReference(at: "output.images[1]") == "b")
        #expect(p.outputReference(at: "output[0]") == nil)
        #expect(p.outputReference(at: "output.missing") == nil)
        let single = try #require(Prediction(json: .object(["id": .string("q"), "status": .string("succeeded"), "output": .array([.string("x")])])))
        #expect(single.outputReference(at: "output[0]") == "x")
        #expect(single.status == .succeeded)
    }

    @Test func anErrorObjectIsReadAsText() throws {
        let json = try #require(JSONValue.parse(Array(#"{"id":"p","status":"failed","error":{"msg":"CUDA OOM"}}"#.utf8)))
        let p = try #require(Prediction(json: json))
        #expect(p.error == #"{"msg":"CUDA OOM"}"#)
    }

    @Test func retryAfterIsSecondsOrADate() {
        #expect(JobAPIClient.retryAfter("45", now: 0) == 45)
        // Sun, 06 Nov 1994 08:49:37 GMT is 784111777.
        #expect(JobAPIClient.retryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_777 - 30) == 30)
        #expect(JobAPIClient.retryAfter("soon", now: 0) == nil)
    }

    @Test func faultsAreClassifiedAsDesignSays() {
        for status in [429, 502, 503, 504] { #expect(JobAPIError.http(status: status, message: "", retryAfter: nil).isTransient) }
        for status in [400, 401, 403, 404, 422, 500] { #expect(JobAPIError.http(status: status, message: "", retryAfter: nil).isPermanent) }
        #expect(JobAPIError.reset("x").isTransient && JobAPIError.timeout(seconds: 30).isTransient)
        #expect(JobAPIError.notAPI(status: 200, snippet: "<html>").isPermanent)
        #expect(JobAPIError.unreachable("refused").isOffline && !JobAPIError.unreachable("refused").isPermanent)
        #expect(JobAPIError.http(status: 401, message: "bad", retryAfter: nil).hint(endpoint: "gpu")
                == "check the token for endpoint 'gpu' in secrets.yaml (or FLOWDIR_TOKEN_GPU)")
    }

    @Test func secretsAreReadOnlyFromAPrivateFileAndTheEnvironmentWins() throws {
        let dir = try TemporaryDirectory()
        try dir.write("secrets.yaml", "endpoints:\n  gpu: { token: from-file, webhookSecret: whsec_abc }\n  cpu: { token: cpu-token }\n")
        let path = dir.path + "/secrets.yaml"
        chmod(path, 0o600)
        let s = try Secrets.load(path: path, environment: ["FLOWDIR_TOKEN_CPU": "from-env"], endpoints: ["gpu", "cpu"])
        #expect(s.token(for: "gpu") == "from-file" && s.token(for: "cpu") == "from-env" && s.webhookSecret(for: "gpu") == "whsec_abc")
        #expect(!"\(s)".contains("from-file") && !"\(s)".contains("from-env"))
        chmod(path, 0o640)
        #expect {
            _ = try Secrets.load(path: path, environment: [:], endpoints: ["gpu"])
        } throws: { error in
            let e = error as? Secrets.Refused
            return e?.hint == "chmod 600 \(path)" && e?.description.contains("mode 0640") == true && e?.description.contains("from-file") == false
        }
        #expect(try Secrets.load(path: dir.path + "/none.yaml", environment: [:], endpoints: ["gpu"]).token(for: "gpu") == nil)
    }
}
