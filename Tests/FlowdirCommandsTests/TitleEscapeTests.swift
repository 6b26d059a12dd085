#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Issue 31, item 11: text from files is shown on a terminal, never obeyed,
/// colour codes included; flowdir's own colours stay; `--json` stays exact.
@Suite(.tags(.large), Tier.notQuick) struct TitleEscapeTests {
    func setUp() throws -> (TemporaryDirectory, [String: String]) { try CommandFixture.onePicker() }

    static let evil = "A\u{1B}[8mhidden\u{1B}[0m \u{1B}[31mred\u{1B}]0;pwned\u{07}\u{202E}txt.exe\ttab\nnext"

    @Test func escapesInATitleAreShownEvenWhenTheyAreColours() throws {
        let (dir, env) = try setUp()
        let new = try CommandRunner.flowdir(["new", "wf/t.yaml", "inst", "--title", Self.evil], in: dir.path, environment: env)
        #expect(new.status == 0, "\(new.stderr)")
        #expect(!new.stdout.contains("\u{1B}"), "\(new.stdout)")
        for args in [["ls", "."], ["show", "inst"], ["inbox", "."], ["status"]] {
            let r = try CommandRunner.flowdir(args, in: dir.path, environment: env)
            #expect(r.status == 0, "\(args): \(r.stderr)")
            #expect(!r.stdout.contains("\u{1B}") && !r.stdout.contains("\u{202E}"), "\(args): \(r.stdout.debugDescription)")
        }
        let ls = try CommandRunner.flowdir(["ls", "."], in: dir.path, environment: env).stdout.split(separator: "\n")
        #expect(ls.count == 2, "one header, one row: \(ls)")
        #expect(ls.last?.hasPrefix("A^[[8mhidden^[[0m ^[[31mred^[]0;pwned^G<U+202E>txt.exe^Itab^Jnext  ready") == true, "\(ls)")
        // --json is exact, every control escaped as JSON escapes it.
        let json = try CommandRunner.flowdir(["ls", ".", "--json"], in: dir.path, environment: env).stdout
        #expect(json.contains("A\\u001b[8mhidden\\u001b[0m \\u001b[31mred\\u001b]0;pwned\\u0007\\u202etxt.exe\\ttab\\nnext"), "\(json)")
        let rows = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: Any]]
        #expect(rows?.first?["title"] as? String == Self.evil)
    }

    /// On a terminal flowdir colours its own words, and still shows a title's colour codes as text.
    @Test func onATerminalOnlyFlowdirsOwnColoursAreObeyed() throws {
        var (dir, env) = try setUp()
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "inst", "--title", Self.evil], in: dir.path, environment: env).status == 0)
        env["TERM"] = "xterm"
        for args in ["ls .", "show inst", "status"] {
            let command = "'\(RepositoryPaths.flowdirExecutable)' \(args)"
            let r = try CommandRunner.run("/usr/bin/script", ["-qec", command, "/dev/null"], in: dir.path, environment: env)
            #expect(r.status == 0, "\(args): \(r.stdout)")
            #expect(r.stdout.contains("\u{1B}[1m"), "flowdir's bold is kept: \(r.stdout.debugDescription)")
            #expect(r.stdout.contains("A^[[8mhidden^[[0m ^[[31mred^[]0;pwned^G"), "\(args): \(r.stdout.debugDescription)")
            for code in ["\u{1B}[8m", "\u{1B}[31mred", "\u{1B}]"] {
                #expect(!r.stdout.contains(code), "\(args): \(code.debugDescription) reached the terminal: \(r.stdout.debugDescription)")
            }
        }
    }
}
