/// The pages of `flowdir serve`: the files in `Sources/FlowdirPages/Pages/`,
/// put into the binary as it is built (the EmbedPages plugin). `index.html`
/// is `/`; every other file is served at its name.
enum UIAssets {
    struct Asset: Sendable {
        var bytes: [UInt8]
        var contentType: String
    }

    /// By URL path.
    static let all: [String: Asset] = Dictionary(uniqueKeysWithValues: PageFiles.all.map { file in
        (file.name == "index.html" ? "/" : "/" + file.name, Asset(bytes: Array(file.text.utf8), contentType: contentType(of: file.name)))
    })

    /// By the file's extension: the plugin embeds only these three kinds.
    static func contentType(of name: String) -> String {
        if name.hasSuffix(".html") { return "text/html; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        return "text/javascript; charset=utf-8"
    }
}
