/// What flowdir hands to `git` (the one place it runs it: clone, fetch,
/// push): a name or address that starts with `-` would be taken as one of
/// git's options (`--upload-pack=<command>` runs a command), so it is
/// refused, and every list of them is put after `--` as well.
public enum GitArguments {
    /// Not empty, not starting with `-`, no control character.
    public static func isName(_ text: String) -> Bool {
        !text.isEmpty && !text.hasPrefix("-") && text.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }
    }

    public static func refusal(_ what: String, _ text: String) -> String {
        let shown = String(text.unicodeScalars.prefix(80).map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
        return "the \(what) '\(shown)' \(text.isEmpty ? "is empty" : text.hasPrefix("-") ? "starts with '-', which git would take as an option" : "has a control character"); flowdir does not pass it to git"
    }
}
