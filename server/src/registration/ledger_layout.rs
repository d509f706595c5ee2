//! BookKeeper's ledger metadata layout in ZooKeeper, as pure functions: the `LAYOUT` znode
//! and the hierarchical ledger paths, for the garbage collector (docs/gc.md).
//!
//! `ROOT/LAYOUT` (bookkeeper `meta/LedgerLayout.java`, `serialize`) is two lines: the layout
//! format version, then `<manager factory class>:<manager version>`; format 1 stored the
//! manager's short name instead of its class. BookKeeper and Pulsar default to
//! `org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1`
//! (`meta/HierarchicalLedgerManagerFactory.java` extends `LegacyHierarchicalLedgerManagerFactory`,
//! `CUR_VERSION = 1`).
//!
//! Paths (`util/StringUtils.java`): the id zero-padded to 10 digits split 2/4/4, `00/0000/L0000`
//! (`getShortHierarchicalLedgerPath`), or to 19 digits split 3/4/4/4/4,
//! `000/0000/0000/0000/L0000` (`getLongHierarchicalLedgerPath`). The hierarchical manager
//! uses the short form for ids below `Integer.MAX_VALUE` and the long one from it up
//! (`getHybridHierarchicalLedgerPath`); the long-hierarchical manager uses the long form for
//! every id; the legacy one only the short form. All three trees are read the same way: a
//! top-level name of two digits starts a short path, of three digits a long one.

/// The ledger managers whose trees the collector can walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Manager {
    /// `HierarchicalLedgerManagerFactory`: short paths below 2^31 - 1, long ones above.
    Hierarchical,
    /// `LongHierarchicalLedgerManagerFactory`: long paths for every id.
    LongHierarchical,
    /// `LegacyHierarchicalLedgerManagerFactory`: short paths only.
    LegacyHierarchical,
}

/// Why a `LAYOUT` is not one the collector understands.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// Not UTF-8, or not `<format>\n<manager>:<version>`.
    Syntax,
    /// A layout format version other than 1 or 2.
    FormatVersion { version: String },
    /// A manager other than the hierarchical ones (flat, ms, ...), or a manager version
    /// other than 1.
    Manager { manager: String, version: String },
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LayoutError::Syntax => write!(f, "not <format>\\n<manager>:<version>"),
            LayoutError::FormatVersion { version } => {
                write!(f, "layout format version {version:?} (1 or 2 expected)")
            }
            LayoutError::Manager { manager, version } => write!(
                f,
                "ledger manager {manager:?} version {version:?} (only the hierarchical, \
                 long-hierarchical and legacy-hierarchical managers, version 1, are collected)"
            ),
        }
    }
}

/// The name of the layout znode under the root.
pub const LAYOUT_ZNODE: &str = "LAYOUT";

/// Top-level znodes under the root that are not ledger metadata
/// (`AbstractZkLedgerManager.isSpecialZnode` and the bookie registration).
pub const ZNODES_SPECIAL: [&str; 7] = [
    "available",
    "cookies",
    "INSTANCEID",
    "underreplication",
    "idgen",
    "idgen-long",
    LAYOUT_ZNODE,
];

/// The prefix of a ledger znode's name (`StringUtils.LEDGER_NODE_PREFIX`).
const LEDGER_NODE_PREFIX: &str = "L";
/// Digits of a short-form id and of a long-form id.
const SHORT_DIGITS: usize = 10;
const LONG_DIGITS: usize = 19;
/// Digits per path level of each form; the last level carries the `L` prefix.
const SHORT_LEVELS: [usize; 3] = [2, 4, 4];
const LONG_LEVELS: [usize; 5] = [3, 4, 4, 4, 4];
const _: () = assert!(SHORT_LEVELS[0] + SHORT_LEVELS[1] + SHORT_LEVELS[2] == SHORT_DIGITS);
const _: () = assert!(
    LONG_LEVELS[0] + LONG_LEVELS[1] + LONG_LEVELS[2] + LONG_LEVELS[3] + LONG_LEVELS[4]
        == LONG_DIGITS
);

/// Parses the bytes of `ROOT/LAYOUT`.
pub fn layout_parse(bytes: &[u8]) -> Result<Manager, LayoutError> {
    let text = std::str::from_utf8(bytes).map_err(|_| LayoutError::Syntax)?;
    let mut lines = text.split('\n');
    let format = lines.next().ok_or(LayoutError::Syntax)?.trim();
    let manager_line = lines.next().ok_or(LayoutError::Syntax)?.trim();
    if format != "1" && format != "2" {
        return Err(LayoutError::FormatVersion {
            version: format.to_string(),
        });
    }
    let (manager, version) = manager_line.split_once(':').ok_or(LayoutError::Syntax)?;
    let unknown = || LayoutError::Manager {
        manager: manager.to_string(),
        version: version.to_string(),
    };
    if version != "1" {
        return Err(unknown());
    }
    // Format 2 stores the factory class, format 1 the manager's short name.
    match manager {
        "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory" | "hierarchical" => {
            Ok(Manager::Hierarchical)
        }
        "org.apache.bookkeeper.meta.LongHierarchicalLedgerManagerFactory" | "longhierarchical" => {
            Ok(Manager::LongHierarchical)
        }
        "org.apache.bookkeeper.meta.LegacyHierarchicalLedgerManagerFactory"
        | "legacyhierarchical" => Ok(Manager::LegacyHierarchical),
        _ => Err(unknown()),
    }
}

/// The path form a tree branch uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `00/0000/L0000`.
    Short,
    /// `000/0000/0000/0000/L0000`.
    Long,
}

impl Form {
    fn levels(self) -> &'static [usize] {
        match self {
            Form::Short => &SHORT_LEVELS,
            Form::Long => &LONG_LEVELS,
        }
    }

    fn digits(self) -> usize {
        match self {
            Form::Short => SHORT_DIGITS,
            Form::Long => LONG_DIGITS,
        }
    }
}

/// A directory of the ledger tree: its form and the digits of the id so far (one level per
/// directory below the root).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Branch {
    pub form: Form,
    pub digits: String,
    /// Levels already in `digits`.
    pub depth: usize,
}

/// What a child znode of the root or of a `Branch` is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Child {
    /// A directory to list.
    Branch(Branch),
    /// The metadata znode of this ledger.
    Ledger(i64),
    /// Not part of the ledger tree (a special znode, or a top-level name that is no prefix).
    Ignored,
    /// Inside the tree but not a ledger path: every id under the parent is treated as live.
    Unparsed,
}

/// Classifies `name`, a child of the root (`parent` `None`) or of `parent`.
#[must_use]
pub fn child_classify(parent: Option<&Branch>, name: &str) -> Child {
    let Some(parent) = parent else {
        if ZNODES_SPECIAL.contains(&name) || !all_digits(name) {
            return Child::Ignored;
        }
        let form = match name.len() {
            2 => Form::Short,
            3 => Form::Long,
            _ => return Child::Ignored,
        };
        return Child::Branch(Branch {
            form,
            digits: name.to_string(),
            depth: 1,
        });
    };
    let levels = parent.form.levels();
    assert!(parent.depth >= 1);
    assert!(parent.depth < levels.len());
    let last = parent.depth + 1 == levels.len();
    let part = if last {
        match name.strip_prefix(LEDGER_NODE_PREFIX) {
            Some(part) => part,
            None => return Child::Unparsed,
        }
    } else {
        name
    };
    if part.len() != levels[parent.depth] || !all_digits(part) {
        return Child::Unparsed;
    }
    let digits = format!("{}{part}", parent.digits);
    if !last {
        return Child::Branch(Branch {
            form: parent.form,
            digits,
            depth: parent.depth + 1,
        });
    }
    assert_eq!(digits.len(), parent.form.digits());
    // Nineteen digits can exceed i64::MAX; BookKeeper's Long.parseLong fails there too.
    digits.parse().map_or(Child::Unparsed, Child::Ledger)
}

/// The ids a branch can hold, inclusive, clamped to non-negative i64.
#[must_use]
pub fn branch_ids(branch: &Branch) -> (i64, i64) {
    let width = branch.form.digits();
    assert!(branch.digits.len() <= width);
    let rest = width - branch.digits.len();
    let low = format!("{}{}", branch.digits, "0".repeat(rest));
    let high = format!("{}{}", branch.digits, "9".repeat(rest));
    // At most 19 digits: fits i128.
    let clamp = |text: &str| {
        let value: i128 = text.parse().expect("only digits, at most 19");
        i64::try_from(value.min(i128::from(i64::MAX))).expect("clamped")
    };
    (clamp(&low), clamp(&high))
}

impl Manager {
    /// The path form under which this manager stores `ledger`'s metadata; `None` for an id
    /// it cannot store (the legacy manager's ten digits).
    #[must_use]
    pub fn form_of(self, ledger: i64) -> Option<Form> {
        assert!(ledger >= 0);
        match self {
            Manager::Hierarchical => Some(form_hybrid(ledger)),
            Manager::LongHierarchical => Some(Form::Long),
            Manager::LegacyHierarchical => (ledger <= SHORT_ID_MAX).then_some(Form::Short),
        }
    }
}

/// The largest id the short form's ten digits hold.
const SHORT_ID_MAX: i64 = 9_999_999_999;

/// The path of `ledger`'s metadata under a hierarchical root in `form`.
#[must_use]
pub fn ledger_path(root: &str, ledger: i64, form: Form) -> String {
    assert!(ledger >= 0);
    let digits = match form {
        Form::Short => format!("{ledger:010}"),
        Form::Long => format!("{ledger:019}"),
    };
    assert_eq!(digits.len(), form.digits(), "the id fits the form");
    let mut path = root.to_string();
    let mut start = 0;
    let levels = form.levels();
    for (level, &width) in levels.iter().enumerate() {
        path.push('/');
        if level + 1 == levels.len() {
            path.push_str(LEDGER_NODE_PREFIX);
        }
        path.push_str(&digits[start..start + width]);
        start += width;
    }
    path
}

/// The form the hierarchical manager uses for `ledger` (`getHybridHierarchicalLedgerPath`).
#[must_use]
pub fn form_hybrid(ledger: i64) -> Form {
    if ledger < i64::from(i32::MAX) {
        Form::Short
    } else {
        Form::Long
    }
}

fn all_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit())
}
