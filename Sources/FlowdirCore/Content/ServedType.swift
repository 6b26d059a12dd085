/// How a file from an instance is handed to a browser (docs/security.md):
/// shown in the page only when it is a kind a browser cannot run script
/// from — an image (PNG, JPEG, WebP, GIF, recognised by its bytes, never
/// by its name), audio, video, PDF, JSON or plain text; anything else
/// (SVG, HTML, an unknown type, a `.png` that is not one) is a download.
public struct ServedType: Sendable, Equatable, CustomStringConvertible {
    /// The `Content-Type` to send.
    public var contentType: String
    /// Shown in the page (`inline`), else sent as an attachment.
    public var inline: Bool

    public init(contentType: String, inline: Bool) {
        self.contentType = contentType
        self.inline = inline
    }

    /// Bytes to download, never to render.
    public static let download = ServedType(contentType: "application/octet-stream", inline: false)

    public var description: String { contentType + (inline ? " (inline)" : " (attachment)") }

    /// The type of a file by its first bytes (`head`: 64 are enough) and,
    /// for the formats that have no signature (JSON, text), its name.
    public static func of(head: [UInt8], fileName: String) -> ServedType {
        let ext = fileExtension(fileName)
        if let sniffed = ContentCheck.sniff(head) {
            switch sniffed {
            case .png: return ServedType(contentType: "image/png", inline: true)
            case .jpeg: return ServedType(contentType: "image/jpeg", inline: true)
            case .webp: return ServedType(contentType: "image/webp", inline: true)
            case .gif: return ServedType(contentType: "image/gif", inline: true)
            case .mp4: return ServedType(contentType: ext == "m4a" ? "audio/mp4" : "video/mp4", inline: true)
            case .webm: return ServedType(contentType: ext == "weba" ? "audio/webm" : "video/webm", inline: true)
            case .avi: return ServedType(contentType: "video/x-msvideo", inline: true)
            case .wav: return ServedType(contentType: "audio/wav", inline: true)
            case .mp3: return ServedType(contentType: "audio/mpeg", inline: true)
            case .flac: return ServedType(contentType: "audio/flac", inline: true)
            case .ogg: return ServedType(contentType: ext == "ogv" ? "video/ogg" : "audio/ogg", inline: true)
            case .tiff, .exr, .npy, .json, .text, .binary: return .download
            }
        }
        if head.starts(with: Array("%PDF-".utf8)) { return ServedType(contentType: "application/pdf", inline: true) }
        // No signature: by name, and only as types a browser shows as text.
        switch ext {
        case "json": return ServedType(contentType: "application/json", inline: true)
        case "txt", "log", "yaml", "yml", "md", "csv", "tsv", "jsonl", "ndjson":
            return ServedType(contentType: "text/plain; charset=utf-8", inline: true)
        default: return .download
        }
    }

    private static func fileExtension(_ name: String) -> String {
        let last = name.split(separator: "/").last.map(String.init) ?? name
        guard let dot = last.lastIndex(of: "."), dot != last.startIndex else { return "" }
        return String(last[last.index(after: dot)...]).lowercased()
    }
}
