import FlowdirCore

/// A prediction's `input` as JSON (docs/templates-and-tools.md, `run.http`):
/// the values `HTTPRunSpec` filled in, each input file read and sent inline as
/// a `data:` URI up to the endpoint's `inlineLimit`, and through the files API
/// above it.
public enum HTTPInput {
    /// Sends one file through the files API: its URL.
    public typealias Upload = (_ bytes: [UInt8], _ filename: String, _ contentType: String) async throws(NodeError) -> String

    /// Runs on the caller's actor (`isolation`), so `upload` may be one of its methods.
    public static func json(_ input: [(key: String, value: HTTPInputValue)], inlineLimit: Int,
                            read: (String) throws -> [UInt8] = { try LocalFileSystem().readFile($0, limit: 1 << 32) },
                            upload: Upload, isolation: isolated (any Actor)? = #isolation) async throws(NodeError) -> [String: JSONValue] {
        var out: [String: JSONValue] = [:]
        for (key, value) in input {
            out[key] = try await json(value, inlineLimit: inlineLimit, read: read, upload: upload)
        }
        return out
    }

    /// A value with no file in it, as JSON; nil for a file, an array or an object.
    public static func scalar(_ value: HTTPInputValue) -> JSONValue? {
        switch value {
        case .null: .null
        case .bool(let b): .bool(b)
        case .integer(let i): .number(Double(i))
        case .number(let d): .number(d)
        case .string(let s): .string(s)
        case .file, .array, .object: nil
        }
    }

    public static func json(_ value: HTTPInputValue, inlineLimit: Int, read: (String) throws -> [UInt8],
                            upload: Upload, isolation: isolated (any Actor)? = #isolation) async throws(NodeError) -> JSONValue {
        if let scalar = scalar(value) { return scalar }
        switch value {
        case .null, .bool, .integer, .number, .string: return .null  // taken above
        case .array(let items):
            var out: [JSONValue] = []
            for item in items { out.append(try await json(item, inlineLimit: inlineLimit, read: read, upload: upload)) }
            return .array(out)
        case .object(let fields):
            var out: [String: JSONValue] = [:]
            for (k, v) in fields { out[k] = try await json(v, inlineLimit: inlineLimit, read: read, upload: upload) }
            return .object(out)
        case .file(let path):
            let bytes: [UInt8]
            do { bytes = try read(path) } catch {
                throw NodeError(summary: "cannot read input \(path): \(error)", code: "prepareFailed")
            }
            let type = contentType(of: path, bytes: bytes)
            if bytes.count <= inlineLimit { return .string(JobAPIClient.dataURI(bytes, contentType: type)) }
            return .string(try await upload(bytes, Path.basename(path), type))
        }
    }

    /// What the bytes are (their first bytes say, for the formats flowdir
    /// checks), else what the file's extension says.
    public static func contentType(of path: String, bytes: [UInt8]) -> String {
        if let format = ContentCheck.sniff(bytes) { return format.mediaType }
        switch Path.fileExtension(path).lowercased() {
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "webp": return "image/webp"
        case "gif": return "image/gif"
        case "txt", "md": return "text/plain"
        case "json": return "application/json"
        case "wav": return "audio/wav"
        case "mp4": return "video/mp4"
        default: return "application/octet-stream"
        }
    }
}

extension ContentFormat {
    /// Its media type, as a `data:` URI and an upload name it.
    public var mediaType: String {
        switch self {
        case .png: "image/png"
        case .jpeg: "image/jpeg"
        case .webp: "image/webp"
        case .gif: "image/gif"
        case .tiff: "image/tiff"
        case .exr: "image/x-exr"
        case .npy: "application/x-npy"
        case .mp4: "video/mp4"
        case .webm: "video/webm"
        case .avi: "video/x-msvideo"
        case .wav: "audio/wav"
        case .mp3: "audio/mpeg"
        case .flac: "audio/flac"
        case .ogg: "audio/ogg"
        case .json: "application/json"
        case .text: "text/plain"
        case .binary: "application/octet-stream"
        }
    }
}
