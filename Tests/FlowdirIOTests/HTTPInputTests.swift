import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Testing

/// A tool's `run.http.input` made into a prediction's input (docs/templates-and-tools.md):
/// a placeholder alone keeps its JSON type, files go inline or uploaded.
@Suite(.tags(.medium)) struct HTTPInputTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]

    func work(_ input: [ParamEntry], inputs: [String: String] = [:], params: [String: String] = [:],
              typed: [ParamEntry] = []) throws -> HTTPWork {
        try HTTPRunSpec.work([ParamEntry(key: "endpoint", value: .string("gpu")), ParamEntry(key: "model", value: .string("acme/gen")),
                              ParamEntry(key: "input", value: .object(input)),
                              ParamEntry(key: "outputs", value: .object([ParamEntry(key: "out", value: .string("output[0]"))]))],
                             tool: "Gen", inputs: inputs, params: params, typedParams: typed)
    }

    /// What `upload` was asked to send.
    final class Uploads {
        var sent: [String] = []
    }

    func json(_ w: HTTPWork, inlineLimit: Int = 1024, files: [String: [UInt8]] = [:],
              uploaded: Uploads = Uploads()) async throws -> [String: JSONValue] {
        try await HTTPInput.json(w.input, inlineLimit: inlineLimit, read: { path in
            guard let bytes = files[path] else { throw NodeError(summary: "no \(path)", code: "test") }
            return bytes
        }, upload: { bytes, filename, type throws(NodeError) in
            uploaded.sent.append("\(filename) \(type) \(bytes.count)")
            return "https://api.example/v1/files/\(filename)"
        })
    }

    @Test func aPlaceholderAloneKeepsItsTypeAndTextAroundItMakesAString() async throws {
        let w = try work([
            ParamEntry(key: "steps", value: .string("{params.steps}")),
            ParamEntry(key: "cfg", value: .string("{params.cfg}")),
            ParamEntry(key: "hires", value: .string("{params.hires}")),
            ParamEntry(key: "style", value: .string("{params.style}")),
            ParamEntry(key: "label", value: .string("steps={params.steps}")),
            ParamEntry(key: "fixed", value: .array([.int(1), .object([ParamEntry(key: "deep", value: .string("{params.steps}"))])])),
            ParamEntry(key: "fromDefault", value: .string("{params.seed}")),
        ], params: ["steps": "30", "cfg": "4.5", "hires": "true", "style": "sketch", "seed": "42"],
                        typed: [ParamEntry(key: "steps", value: .int(30)), ParamEntry(key: "cfg", value: .double(4.5)),
                                ParamEntry(key: "hires", value: .bool(true)), ParamEntry(key: "style", value: .string("sketch"))])
        let input: [String: JSONValue] = try await json(w)
        #expect(input["steps"] == JSONValue.number(30) && input["cfg"] == .number(4.5) && input["hires"] == .bool(true))
        #expect(input["style"] == .string("sketch") && input["label"] == .string("steps=30"))
        #expect(input["fixed"] == .array([.number(1), .object(["deep": .number(30)])]))
        // A default known only as text reads as what it looks like.
        #expect(input["fromDefault"] == .number(42))
        // On the wire: 30, not "30" nor 30.0.
        #expect(String(decoding: JSONValue.object(["steps": input["steps"]!]).bytes, as: UTF8.self) == #"{"steps":30}"#)
    }

    @Test func aSmallFileGoesInlineAsADataURIOfItsFormat() async throws {
        let w = try work([ParamEntry(key: "image", value: .string("{inputs.image}")), ParamEntry(key: "mask", value: .string("{inputs.mask}"))],
                         inputs: ["image": "/in/photo.png"])
        let uploaded = Uploads()
        let input = try await json(w, files: ["/in/photo.png": Self.png], uploaded: uploaded)
        #expect(input["image"] == .string("data:image/png;base64," + "iVBORw0KGgoAAAAN"))
        #expect(JobAPIClient.decodeDataURI(input["image"]?.stringValue ?? "") == Self.png)
        // An absent optional input is null.
        #expect(input["mask"] == .null)
        #expect(uploaded.sent.isEmpty)
    }

    @Test func aFileAboveTheInlineLimitIsUploaded() async throws {
        let w = try work([ParamEntry(key: "image", value: .string("{inputs.image}"))], inputs: ["image": "/in/big.png"])
        let uploaded = Uploads()
        let bytes = Self.png + [UInt8](repeating: 1, count: 100)
        let input = try await json(w, inlineLimit: 100, files: ["/in/big.png": bytes], uploaded: uploaded)
        #expect(input["image"] == .string("https://api.example/v1/files/big.png"))
        #expect(uploaded.sent == ["big.png image/png 112"])
        // At the limit exactly, still inline.
        let inline = try await json(w, inlineLimit: 112, files: ["/in/big.png": bytes])
        #expect(inline["image"]?.stringValue?.hasPrefix("data:image/png;base64,") == true)
    }

    @Test func theContentTypeIsWhatTheBytesAreThenWhatTheNameSays() {
        #expect(HTTPInput.contentType(of: "/x/photo.bin", bytes: Self.png) == "image/png")
        #expect(HTTPInput.contentType(of: "/x/photo.png", bytes: [0xFF, 0xD8, 0xFF, 0xE0]) == "image/jpeg")
        #expect(HTTPInput.contentType(of: "/x/notes.txt", bytes: Array("hello".utf8)) == "text/plain")
        #expect(HTTPInput.contentType(of: "/x/data.json", bytes: Array("{}".utf8)) == "application/json")
        #expect(HTTPInput.contentType(of: "/x/blob", bytes: [1, 2, 3]) == "application/octet-stream")
    }

    @Test func anUnreadableFileSaysWhich() async throws {
        let w = try work([ParamEntry(key: "image", value: .string("{inputs.image}"))], inputs: ["image": "/in/gone.png"])
        await #expect {
            _ = try await json(w)
        } throws: { error in
            (error as? NodeError)?.summary.contains("/in/gone.png") == true && (error as? NodeError)?.code == "prepareFailed"
        }
    }
}
