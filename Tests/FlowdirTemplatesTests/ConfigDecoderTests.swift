import FlowdirCore
@testable import FlowdirTemplates
import FlowdirTestSupport
import Testing

/// The user's config: an empty or comment-only file is a valid config with
/// every default (docs/commands.md, "Config"); a broken one says what a config is, not
/// what a template needs.
@Suite(.tags(.small)) struct ConfigDecoderTests {
    @Test(arguments: ["", "\n\n", "# my flowdir config\n", "---\n# nothing yet\n", "\u{FEFF}# bom\n", "  # indented\n...\n",
                            // A document marker with a comment, YAML's null, a directive: still nothing set.
                            "--- # flowdir config\n", "~\n", "null\n", "%YAML 1.2\n---\n", "# a\r\n---\r\n# b\r\n"])
    func blankConfigsAreEveryDefault(_ text: String) throws {
        let config = try ConfigDecoder.decode(Array(text.utf8), file: "/c/config.yaml", home: "/home/me").get()
        #expect(config.roots.isEmpty && config.toolPaths.isEmpty && config.hooks.isEmpty)
    }

    @Test func aBrokenConfigGetsAConfigsHint() {
        guard case .failure(let d) = ConfigDecoder.decode(Array(": : :\n".utf8), file: "/c/config.yaml", home: "/h") else {
            Issue.record("a broken config decoded")
            return
        }
        #expect(d.hint?.contains("YAML mapping (roots") == true, "\(String(describing: d.hint))")
        #expect(d.hint?.contains("template") == false)
    }

    @Test func storageSizesAreRead() throws {
        let config = try ConfigDecoder.decode(Array("storage: { bigFile: 2MB, thumbnails: 50MB }\n".utf8), file: "/c/config.yaml", home: "/h").get()
        #expect(config.bigFile == 2 << 20 && config.thumbnails == 50 << 20)
        let defaults = try ConfigDecoder.decode(Array("roots: [/r]\n".utf8), file: "/c/config.yaml", home: "/h").get()
        #expect(defaults.bigFile == 512 << 10 && defaults.thumbnails == 200 << 20)
        for bad in ["storage: { thumbnails: lots }\n", "storage: { thumbnails: 0 }\n", "storage: { thumbs: 1MB }\n"] {
            guard case .failure(let d) = ConfigDecoder.decode(Array(bad.utf8), file: "/c/config.yaml", home: "/h") else {
                Issue.record("\(bad) decoded")
                continue
            }
            #expect(d.message.contains("storage."), "\(d.message)")
        }
    }

    @Test func settingsAreStillRead() throws {
        let config = try ConfigDecoder.decode(Array("# roots\nroots: [~/flows]\n".utf8), file: "/c/config.yaml", home: "/home/me").get()
        #expect(config.roots == ["/home/me/flows"])
    }

    /// Each backend reads its own section; a key that names a backend without
    /// settings is left alone, as any key this flowdir does not know.
    @Test func backendsCheckTheirOwnSections() throws {
        let config = try ConfigDecoder.decode(Array("slurm: { pollInterval: 3s }\nssh: { pollInterval: 2s, command: ssh -F /c/ssh }\nhttp: whatever\n".utf8),
                                              file: "/c/config.yaml", home: "/h").get()
        #expect(config.backendSettings["slurm"]?[key: "pollInterval"]?.value.stringValue == "3s")
        #expect(config.backendSettings["ssh"]?[key: "command"]?.value.stringValue == "ssh -F /c/ssh")
        for (bad, naming) in [("ssh: { pollInterval: soon }\n", "ssh.pollInterval"), ("ssh: { hosts: [a] }\n", "`ssh` takes"),
                              ("slurm: 3\n", "`slurm` must be a mapping")] {
            guard case .failure(let d) = ConfigDecoder.decode(Array(bad.utf8), file: "/c/config.yaml", home: "/h") else {
                Issue.record("\(bad) decoded")
                continue
            }
            #expect(d.message.contains(naming) && d.location?.line == 1, "\(d.message)")
        }
    }
}
