#include "chat/jinja/py_str.h"

#include <algorithm>
#include <cstdio>

#include "util/utf8.h"

namespace vllm::chat::jinja::py {

bool is_ascii(std::string_view s) {
    for (char c : s)
        if (static_cast<unsigned char>(c) >= 0x80) return false;
    return true;
}

size_t length(std::string_view s) {
    size_t n = 0;
    for (char c : s)
        if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
    return n;
}

std::vector<size_t> codepoint_offsets(std::string_view s) {
    std::vector<size_t> offsets;
    offsets.reserve(s.size() + 1);
    for (size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) offsets.push_back(i);
    offsets.push_back(s.size());
    return offsets;
}

std::vector<std::string> characters(std::string_view s) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < s.size()) {
        size_t start = i;
        utf8::decode(s, i);
        out.emplace_back(s.substr(start, i - start));
    }
    return out;
}

bool is_space(uint32_t cp) {
    if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

size_t leading_space(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        size_t next = i;
        if (!is_space(utf8::decode(s, next))) break;
        i = next;
    }
    return i;
}

size_t trailing_space(std::string_view s) {
    size_t end = s.size();
    while (end > 0) {
        size_t start = end - 1;
        while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t probe = start;
        if (!is_space(utf8::decode(s, probe))) break;
        end = start;
    }
    return s.size() - end;
}

namespace {

bool in_chars(uint32_t cp, const std::string& chars) {
    size_t i = 0;
    while (i < chars.size())
        if (utf8::decode(chars, i) == cp) return true;
    return false;
}

}  // namespace

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
    if (!chars) {
        size_t begin = left ? leading_space(s) : 0;
        if (begin == s.size()) return "";
        size_t end = right ? s.size() - trailing_space(s) : s.size();
        return std::string(s.substr(begin, end - begin));
    }
    std::vector<size_t> offsets = codepoint_offsets(s);
    size_t first = 0, last = offsets.size() - 1;  // code point range [first, last)
    auto cp_at = [&](size_t k) {
        size_t i = offsets[k];
        return utf8::decode(s, i);
    };
    if (left)
        while (first < last && in_chars(cp_at(first), *chars)) ++first;
    if (right)
        while (last > first && in_chars(cp_at(last - 1), *chars)) --last;
    return std::string(s.substr(offsets[first], offsets[last] - offsets[first]));
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
    std::vector<std::string> out;
    if (sep) {
        size_t pos = 0;
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            size_t found = s.find(*sep, pos);
            if (found == std::string_view::npos) break;
            out.emplace_back(s.substr(pos, found - pos));
            pos = found + sep->size();
        }
        out.emplace_back(s.substr(pos));
        return out;
    }
    size_t i = leading_space(s);
    while (i < s.size()) {
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
            out.emplace_back(s.substr(i));  // the remainder keeps its trailing whitespace
            return out;
        }
        size_t start = i;
        while (i < s.size()) {
            size_t next = i;
            if (is_space(utf8::decode(s, next))) break;
            i = next;
        }
        out.emplace_back(s.substr(start, i - start));
        i += leading_space(s.substr(i));
    }
    return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
    std::vector<std::string> out;  // collected from the right, reversed at the end
    if (sep) {
        size_t end = s.size();
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            if (end < sep->size()) break;
            size_t found = s.substr(0, end).rfind(*sep);
            if (found == std::string_view::npos) break;
            out.emplace_back(s.substr(found + sep->size(), end - found - sep->size()));
            end = found;
        }
        out.emplace_back(s.substr(0, end));
        std::reverse(out.begin(), out.end());
        return out;
    }
    size_t end = s.size() - trailing_space(s);
    while (end > 0) {
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
            out.emplace_back(s.substr(0, end));  // the remainder keeps its leading whitespace
            break;
        }
        size_t start = end;
        while (start > 0) {
            size_t prev = start - 1;
            while (prev > 0 && (static_cast<unsigned char>(s[prev]) & 0xC0) == 0x80) --prev;
            size_t probe = prev;
            if (is_space(utf8::decode(s, probe))) break;
            start = prev;
        }
        out.emplace_back(s.substr(start, end - start));
        end = start - trailing_space(s.substr(0, start));
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
    std::vector<std::string> out;
    size_t line_start = 0, i = 0;
    while (i < s.size()) {
        size_t at = i;
        uint32_t cp = utf8::decode(s, i);
        bool is_break = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || (cp >= 0x1C && cp <= 0x1E) ||
                        cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!is_break) continue;
        if (cp == '\r' && i < s.size() && s[i] == '\n') ++i;
        out.emplace_back(s.substr(line_start, (keepends ? i : at) - line_start));
        line_start = i;
    }
    if (line_start < s.size()) out.emplace_back(s.substr(line_start));
    return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, int64_t count) {
    std::string out;
    if (old.empty()) {
        // Python inserts the replacement before every character and at the end.
        int64_t done = 0;
        size_t i = 0;
        while (i <= s.size()) {
            if (count < 0 || done < count) {
                out += with;
                ++done;
            }
            if (i == s.size()) break;
            size_t start = i;
            utf8::decode(s, i);
            out += s.substr(start, i - start);
        }
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        size_t found = s.find(old, pos);
        if (found == std::string_view::npos) break;
        out += s.substr(pos, found - pos);
        out += with;
        pos = found + old.size();
        ++done;
    }
    out += s.substr(pos);
    return out;
}

int64_t count(std::string_view s, std::string_view sub) {
    if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
    int64_t n = 0;
    size_t pos = 0;
    while ((pos = s.find(sub, pos)) != std::string_view::npos) {
        ++n;
        pos += sub.size();
    }
    return n;
}

int64_t find(std::string_view s, std::string_view sub, bool from_right) {
    size_t at = from_right ? s.rfind(sub) : s.find(sub);
    if (at == std::string_view::npos) return -1;
    return static_cast<int64_t>(length(s.substr(0, at)));
}

std::string upper(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

namespace {
bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
}  // namespace

std::string title(std::string_view s) {
    std::string out(s);
    bool previous_cased = false;
    for (char& c : out) {
        if (is_ascii_letter(c)) {
            if (previous_cased) {
                if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
            } else if (c >= 'a' && c <= 'z') {
                c = static_cast<char>(c - 'a' + 'A');
            }
            previous_cased = true;
        } else {
            previous_cased = false;
        }
    }
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out = lower(s);
    if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
    return out;
}

namespace {

// Python's str.isprintable() for non-ASCII code points (separators, format
// and control characters, private use and unassigned surrogates print escaped).
bool is_printable_non_ascii(uint32_t cp) {
    if (cp < 0xA1 || cp == 0xAD) return false;
    if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
        (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB))
        return false;
    if ((cp >= 0xD800 && cp <= 0xF8FF) || cp >= 0xF0000) return false;  // surrogates, private use
    return true;
}

}  // namespace

std::string repr(std::string_view s) {
    bool has_single = s.find('\'') != std::string_view::npos;
    bool has_double = s.find('"') != std::string_view::npos;
    char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    size_t i = 0;
    while (i < s.size()) {
        size_t start = i;
        uint32_t cp = utf8::decode(s, i);
        char buf[16];
        if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0x100 && !is_printable_non_ascii(cp))) {
            std::snprintf(buf, sizeof buf, "\\x%02x", cp);
            out += buf;
        } else if (cp >= 0x100 && !is_printable_non_ascii(cp)) {
            std::snprintf(buf, sizeof buf, cp > 0xFFFF ? "\\U%08x" : "\\u%04x", cp);
            out += buf;
        } else {
            out += s.substr(start, i - start);
        }
    }
    out += quote;
    return out;
}

}  // namespace vllm::chat::jinja::py
