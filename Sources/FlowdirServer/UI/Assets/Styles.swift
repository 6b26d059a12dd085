extension UIAssets {
    static let appCSS = ##"""
"""##
}
