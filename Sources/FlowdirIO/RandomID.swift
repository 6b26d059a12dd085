/// Random (version 4) UUIDs for instance and await ids; tokens.
public enum RandomID {
    /// 192 random bits as hex (the system's generator: getrandom(2)).
    public static func token() -> String {
        (0..<24).map { _ in
            let h = String(UInt8.random(in: 0...255), radix: 16)
            return h.count == 1 ? "0" + h : h
        }.joined()
    }

    public static func uuid() -> String {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let hex = bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
        let h = Array(hex)
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-" + String(h[20..<32])
    }
}
