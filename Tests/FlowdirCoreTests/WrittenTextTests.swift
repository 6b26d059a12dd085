import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// What flowdir writes for people and tools to read back line by line, and
/// the commands it suggests for copying (issue #41, lows).
@Suite(.tags(.small)) struct WrittenTextTests {
    /// A name with a line break made a trailer of the rest of a subject.
    @Test func aCommitSubjectIsOneLineWhateverItNames() throws {
        let m = CommitMessage(summary: "Refuse inbox/x\nFlowdir-Transition: pick awaitingUser→succeeded run=1\n\u{1B}[2Jy", event: "reject",
                              transitions: [Transition(node: "a\nb", from: "ready", to: "failed", run: 1)],
                              body: "renumbered\nFlowdir-Event: fake\n\u{7}")
        let text = m.text
        let subject = try #require(text.split(separator: "\n").first)
        #expect(subject == "Refuse inbox/x^JFlowdir-Transition: pick awaitingUser→succeeded run=1^J^[[2Jy")
        #expect(!text.contains("\u{1B}") && !text.contains("\u{7}"))
        let back = try #require(CommitMessage(parsing: text))
        #expect(back.event == "reject")
        #expect(back.transitions.map(\.node) == ["a^Jb"])
        #expect(CommitMessage(summary: String(repeating: "x", count: 5000), event: "e").text.split(separator: "\n")[0].count == 400)
    }

    @Test func plainTextEscapesEveryControl() {
        #expect(PlainText.oneLine("a\tb\r\nc\u{7F}\u{85}\u{2028}\u{202E}") == "a^Ib^M^Jc^?<U+0085><U+2028><U+202E>")
        #expect(PlainText.lines("a\nb\tc\u{1B}") == "a\nb\tc^[")
        #expect(PlainText.oneLine("plain — text ✓") == "plain — text ✓")
    }

    /// Each suggested command, pasted into a shell, gives back exactly its words.
    @Test func quotedCommandsReadBackExactly() throws {
        let words = ["flowdir", "answer", "my photo/pick", "--choice", "it's", "$(touch /tmp/x)", "a\nb", "`id`", "", "-", "~user", "*", "plain/path-1.png"]
        let line = Shell.command(words)
        #expect(Shell.quote("plain/path-1.png") == "plain/path-1.png")
        #expect(Shell.quote("it's") == #"'it'\''s'"#)
        let r = try CommandRunner.run("/bin/sh", ["-c", "printf '%s\\0' " + line])
        #expect(r.stdout.split(separator: "\0", omittingEmptySubsequences: false).dropLast().map(String.init) == words)
    }

    @Test func anAwaitFilesCommandsAreQuoted() {
        let a = AwaitRecord(id: "x", node: "pick", type: .choice, title: "Choose\nchoice: b", createdAt: Timestamp(seconds: 0), skippable: true,
                            choices: ["a b", "c"], link: "")
        let lines = AwaitPolicy.instructions(a, instanceName: "my 'photo'")
        #expect(lines.contains { $0.contains(#"flowdir answer 'my '\''photo'\''/pick' --choice 'a b'"#) }, "\(lines)")
        #expect(lines.contains(#"Or skip it: flowdir skip 'my '\''photo'\''/pick'"#), "\(lines)")
    }

    /// `check` on 20,000 diagnostics of one file: each line found once for
    /// all of them, so the work is the file's size, not 20,000 times it.
    @Test func renderingManyDiagnosticsIsLinear() {
        let n = 20_000
        let source = (1...n).map { "  - { from: [missing\($0), out], to: [b, in] }" }.joined(separator: "\n") + "\n"
        let diagnostics = (1...n).map {
            Diagnostic.error(.unknownNode, "node 'missing\($0)' does not exist", at: SourceLocation(file: "t.yaml", line: $0, column: 15))
        }
        var scanned = 0
        let texts = DiagnosticRenderer(sources: ["t.yaml": source]).renderEach(diagnostics, scanned: &scanned)
        #expect(texts.count == n)
        #expect(texts[n - 1].contains("\(n) |   - { from: [missing\(n), out]"))
        #expect(scanned == source.unicodeScalars.count, "\(scanned)")
        // The same text, one by one as before.
        #expect(texts[17] == DiagnosticRenderer(sources: ["t.yaml": source]).render(diagnostics[17]))
    }

    @Test func aFarColumnIsNotAScreenOfSpaces() {
        let line = String(repeating: "x", count: 100_000)
        let d = Diagnostic.error(.malformedFile, "here", at: SourceLocation(file: "m.json", line: 1, column: 99_000))
        let out = DiagnosticRenderer(sources: ["m.json": line]).render(d)
        #expect(out.utf8.count < 2_000, "\(out.utf8.count)")
    }
}
