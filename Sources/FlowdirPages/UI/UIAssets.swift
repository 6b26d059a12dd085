/// The pages of `flowdir serve`, compiled into the binary as the files
/// under `Assets/` spell them (raw string literals: a SwiftPM
/// `embedInCode` byte array of the same text takes the compiler ~100× as long).
enum UIAssets {
    struct Asset: Sendable {
        var bytes: [UInt8]
        var contentType: String
    }

    /// By URL path.
    static let all: [String: Asset] = [
        "/": Asset(bytes: Array(indexHTML.utf8), contentType: "text/html; charset=utf-8"),
        "/app.css": Asset(bytes: Array(appCSS.utf8), contentType: "text/css; charset=utf-8"),
        "/app.js": Asset(bytes: Array(appJS.utf8), contentType: "text/javascript; charset=utf-8"),
        "/mask.js": Asset(bytes: Array(maskJS.utf8), contentType: "text/javascript; charset=utf-8"),
        "/editors.js": Asset(bytes: Array(editorsJS.utf8), contentType: "text/javascript; charset=utf-8"),
        "/params.js": Asset(bytes: Array(paramsJS.utf8), contentType: "text/javascript; charset=utf-8"),
    ]
}
