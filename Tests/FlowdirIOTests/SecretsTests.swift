#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Testing

/// secrets.yaml and the environment (docs/commands.md, "Config"): only a private file is
/// read, the environment wins, and no secret appears in any message.
@Suite(.tags(.medium)) struct SecretsTests {
    static let fileToken = "r8_FromTheFile_8c1e"
    static let fileSecret = "whsec_FromTheFile_77aa"

    func write(_ text: String, mode: mode_t) throws -> (TemporaryDirectory, String) {
        let dir = try TemporaryDirectory()
        try dir.write("secrets.yaml", text)
        let path = dir.path + "/secrets.yaml"
        chmod(path, mode)
        return (dir, path)
    }

    var standard: String { "endpoints:\n  gpu: { token: \(Self.fileToken), webhookSecret: \(Self.fileSecret) }\n" }

    func refusal(_ path: String) -> Secrets.Refused? {
        do {
            _ = try Secrets.load(path: path, environment: [:], endpoints: ["gpu"])
            return nil
        } catch {
            #expect(!error.description.contains(Self.fileToken) && !error.description.contains(Self.fileSecret))
            #expect(!error.hint.contains(Self.fileToken) && !error.hint.contains(Self.fileSecret))
            return error
        }
    }

    @Test func aFileOthersCanReadIsRefusedWithTheModeAndTheFix() throws {
        let (dir, path) = try write(standard, mode: 0o644)
        _ = dir
        let e = try #require(refusal(path))
        #expect(e.description.contains(path) && e.description.contains("mode 0644"))
        #expect(e.hint == "chmod 600 \(path)")
        chmod(path, 0o620)  // others may not read it, the group may change it
        #expect(refusal(path)?.description.contains("mode 0620") == true)
    }

    @Test func aPrivateFileIsRead() throws {
        let (dir, path) = try write(standard, mode: 0o600)
        _ = dir
        let s = try Secrets.load(path: path, environment: [:], endpoints: ["gpu"])
        #expect(s.token(for: "gpu") == Self.fileToken && s.webhookSecret(for: "gpu") == Self.fileSecret)
        #expect(s.token(for: "cpu") == nil)
        // Printing it names the endpoints only.
        #expect("\(s)" == "secrets for gpu (not shown)")
        var dumped = ""
        dump(s, to: &dumped)
        #expect(!dumped.contains(Self.fileToken) && !dumped.contains(Self.fileSecret) && dumped.contains("gpu"))
    }

    @Test func theEnvironmentWinsOverTheFile() throws {
        let (dir, path) = try write(standard, mode: 0o600)
        _ = dir
        let env = ["FLOWDIR_TOKEN_GPU": "r8_FromTheEnvironment", "FLOWDIR_WEBHOOK_SECRET_GPU": "whsec_env",
                   "FLOWDIR_TOKEN_GPU_2": "r8_second"]
        let s = try Secrets.load(path: path, environment: env, endpoints: ["gpu", "gpu-2"])
        #expect(s.token(for: "gpu") == "r8_FromTheEnvironment" && s.webhookSecret(for: "gpu") == "whsec_env")
        // `gpu-2` → FLOWDIR_TOKEN_GPU_2, and no file needed for it.
        #expect(s.token(for: "gpu-2") == "r8_second")
        #expect(EndpointConfig(name: "gpu-2", url: "").webhookSecretVariable == "FLOWDIR_WEBHOOK_SECRET_GPU_2")
        // An empty variable is no token.
        let empty = try Secrets.load(path: path, environment: ["FLOWDIR_TOKEN_GPU": ""], endpoints: ["gpu"])
        #expect(empty.token(for: "gpu") == Self.fileToken)
    }

    @Test func noFileIsNoSecrets() throws {
        let s = try Secrets.load(path: "/nonexistent/flowdir/secrets.yaml", environment: ["FLOWDIR_TOKEN_GPU": "r8_env"], endpoints: ["gpu"])
        #expect(s.token(for: "gpu") == "r8_env" && s.webhookSecret(for: "gpu") == nil)
    }

    @Test func aBrokenFileSaysWhereButNotWhatTheLineHolds() throws {
        let (dir, path) = try write("endpoints:\n  gpu: { token: \(Self.fileToken)\n", mode: 0o600)
        _ = dir
        let e = try #require(refusal(path))
        #expect(e.description.contains(path) && e.description.contains("not valid YAML"))
    }

    @Test func aTokenYAMLReadsAsANumberIsRefusedNotGuessed() throws {
        let (dir, path) = try write("endpoints:\n  gpu: { token: 012345 }\n", mode: 0o600)
        _ = dir
        let e = try #require(refusal(path))
        #expect(e.description.contains("token of endpoint 'gpu'") && e.hint.contains("quote it"))
        #expect(!e.description.contains("12345"))
    }
}
