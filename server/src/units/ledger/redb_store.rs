//! The ledger's redb home: a file in the state folder, or memory. Each write is one transaction
//! (committed with redb's default `Durability::Immediate`, an fsync, before it returns).

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::{
    Admission, JOURNAL_MAX_AGE_MS, JOURNAL_MAX_PER_UNIT, Recorded, Told, UnitError, Word, journal_key, judge, prefix,
    settled, settled_entry, store_error, to_json, unreadable, unsettled,
};

pub(super) const META: TableDefinition<&str, &str> = TableDefinition::new("meta");
pub(super) const LAST: TableDefinition<&str, &str> = TableDefinition::new("last_action");
pub(super) const JOURNAL: TableDefinition<&str, &str> = TableDefinition::new("journal");
pub(super) const REVIEWS: TableDefinition<&str, &str> = TableDefinition::new("reviews");
pub(super) const PRIOR: TableDefinition<&str, &str> = TableDefinition::new("prior_action");

pub(super) fn redb_get(
    db: &Database,
    table: TableDefinition<'static, &'static str, &'static str>,
    key: &str,
) -> Result<Option<String>, UnitError> {
    let read = db.begin_read().map_err(|error| store_error("read")(error.into()))?;
    let table = read.open_table(table).map_err(|error| store_error("read")(error.into()))?;
    let value = table.get(key).map_err(|error| store_error("read")(error.into()))?;
    Ok(value.map(|value| value.value().to_owned()))
}

/// The epoch of a redb ledger: the one it holds, else `now_ms`, written.
pub(super) fn open_epoch(db: &Database, now_ms: i64) -> Result<i64, UnitError> {
    let write = db.begin_write().map_err(|error| store_error("start")(error.into()))?;
    let epoch = {
        let mut meta = write.open_table(META).map_err(|error| store_error("start")(error.into()))?;
        let held = meta
            .get("epoch_ms")
            .map_err(|error| store_error("start")(error.into()))?
            .and_then(|value| value.value().parse::<i64>().ok());
        match held {
            Some(epoch) => epoch,
            None => {
                meta.insert("epoch_ms", now_ms.to_string().as_str())
                    .map_err(|error| store_error("start")(error.into()))?;
                now_ms
            }
        }
    };
    // Also creates every table, so that readers never meet a missing one.
    for table in [LAST, JOURNAL, REVIEWS, PRIOR] {
        write.open_table(table).map_err(|error| store_error("start")(error.into()))?;
    }
    write.commit().map_err(|error| store_error("start")(error.into()))?;
    Ok(epoch)
}

pub(super) fn redb_last(db: &Database, unit: &str, now_ms: i64) -> Result<Option<Admission>, UnitError> {
    let read = db.begin_read().map_err(|error| store_error("read")(error.into()))?;
    let text = {
        let table = read.open_table(LAST).map_err(|error| store_error("read")(error.into()))?;
        let value = table.get(unit).map_err(|error| store_error("read")(error.into()))?;
        value.map(|value| value.value().to_owned())
    };
    drop(read);
    let Some(text) = text else { return Ok(None) };
    match serde_json::from_str::<Admission>(&text) {
        Ok(admission) => Ok(Some(admission)),
        Err(error) => {
            let replaced = unreadable(now_ms, &error.to_string());
            let write = db.begin_write().map_err(|error| store_error("write")(error.into()))?;
            {
                let mut table = write.open_table(LAST).map_err(|error| store_error("write")(error.into()))?;
                table.insert(unit, to_json(&replaced)?.as_str()).map_err(|error| store_error("write")(error.into()))?;
            }
            write.commit().map_err(|error| store_error("write")(error.into()))?;
            Ok(Some(replaced))
        }
    }
}

pub(super) fn redb_record(
    db: &Database,
    unit: &str,
    admission: &Admission,
    entry: &str,
    text: &str,
) -> Result<Recorded, UnitError> {
    let fail = store_error("record the admission");
    let write = db.begin_write().map_err(|error| fail(error.into()))?;
    {
        let mut reviews = write.open_table(REVIEWS).map_err(|error| fail(error.into()))?;
        let review = format!("{}{}", prefix(unit), admission.review_uid);
        if reviews.get(review.as_str()).map_err(|error| fail(error.into()))?.is_some() {
            return Ok(Recorded::Replayed);
        }
        reviews.insert(review.as_str(), text).map_err(|error| fail(error.into()))?;
        prune(&mut reviews, unit, admission.at_ms).map_err(&fail)?;

        let mut last = write.open_table(LAST).map_err(|error| fail(error.into()))?;
        let held = last.get(unit).map_err(|error| fail(error.into()))?.map(|held| held.value().to_owned());
        let parsed = held.as_deref().map(serde_json::from_str::<Admission>);
        let later = match &parsed {
            Some(Ok(held)) => held.at_ms <= admission.at_ms,
            Some(Err(_)) | None => true,
        };
        if later {
            last.insert(unit, text).map_err(|error| fail(error.into()))?;
            // The action the cooldowns fall back to should this one be retracted: the one it
            // replaces, unless that one was retracted (then its own prior stays).
            let mut prior = write.open_table(PRIOR).map_err(|error| fail(error.into()))?;
            match (&held, &parsed) {
                (Some(_), Some(Ok(held))) if held.retracted() => {}
                (Some(held), _) => {
                    prior.insert(unit, held.as_str()).map_err(|error| fail(error.into()))?;
                }
                (None, _) => {
                    prior.remove(unit).map_err(|error| fail(error.into()))?;
                }
            }
        }

        let mut journal = write.open_table(JOURNAL).map_err(|error| fail(error.into()))?;
        let key = format!("{}{entry}", prefix(unit));
        if journal.get(key.as_str()).map_err(|error| fail(error.into()))?.is_none() {
            journal.insert(key.as_str(), text).map_err(|error| fail(error.into()))?;
        }
        prune(&mut journal, unit, admission.at_ms).map_err(&fail)?;
    }
    // Durability::Immediate (redb's default): the commit returns once the file is synced.
    write.commit().map_err(|error| fail(error.into()))?;
    Ok(Recorded::New)
}

pub(super) fn redb_settle(db: &Database, unit: &str, word: &Word) -> Result<Told, UnitError> {
    let fail = store_error("settle the admission");
    // Judged on a read first: a collected count that settles nothing takes no write lock.
    let read = |table, key: &str| redb_get(db, table, key);
    if let Some(uid) = &word.review_uid
        && read(REVIEWS, &format!("{}{uid}", prefix(unit)))?.is_some()
    {
        return Ok(Told::Nothing);
    }
    let Some(last) = read(LAST, unit)?.and_then(|text| serde_json::from_str::<Admission>(&text).ok()) else {
        return Ok(Told::Nothing);
    };
    if judge(&last, word).is_none() {
        return Ok(unsettled(&last, word));
    }
    let write = db.begin_write().map_err(|error| fail(error.into()))?;
    let updated = {
        let mut records = write.open_table(LAST).map_err(|error| fail(error.into()))?;
        let held = records.get(unit).map_err(|error| fail(error.into()))?.map(|held| held.value().to_owned());
        let Some(last) = held.and_then(|text| serde_json::from_str::<Admission>(&text).ok()) else {
            return Ok(Told::Nothing);
        };
        let Some(state) = judge(&last, word) else { return Ok(unsettled(&last, word)) };
        let updated = settled(last, state, word);
        records.insert(unit, to_json(&updated)?.as_str()).map_err(|error| fail(error.into()))?;
        for (table, key) in [
            (JOURNAL, format!("{}{}", prefix(unit), journal_key(&updated))),
            (REVIEWS, format!("{}{}", prefix(unit), updated.review_uid)),
        ] {
            let mut entries = write.open_table(table).map_err(|error| fail(error.into()))?;
            let entry =
                entries.get(key.as_str()).map_err(|error| fail(error.into()))?.map(|text| text.value().to_owned());
            if let Some(text) = entry.as_deref().and_then(|text| settled_entry(text, &updated)) {
                entries.insert(key.as_str(), text.as_str()).map_err(|error| fail(error.into()))?;
            }
        }
        updated
    };
    write.commit().map_err(|error| fail(error.into()))?;
    Ok(Told::Settled(Box::new(updated)))
}

/// The `(key, value)` pairs of one unit in `table`.
pub(super) fn range_of(
    table: &impl ReadableTable<&'static str, &'static str>,
    unit: &str,
) -> Result<Vec<(String, String)>, UnitError> {
    let start = prefix(unit);
    let end = format!("{unit}\u{20}");
    let mut entries = Vec::new();
    for item in table.range(start.as_str()..end.as_str()).map_err(|error| store_error("read")(error.into()))? {
        let (key, value) = item.map_err(|error| store_error("read")(error.into()))?;
        entries.push((key.value().to_owned(), value.value().to_owned()));
    }
    Ok(entries)
}

/// Drops the unit's entries older than the age bound and beyond the count bound.
pub(super) fn prune(
    table: &mut redb::Table<'_, &'static str, &'static str>,
    unit: &str,
    now_ms: i64,
) -> Result<(), redb::Error> {
    let entries = range_of(&*table, unit).map_err(|error| redb::Error::Corrupted(error.to_string()))?;
    let mut dated: Vec<(i64, String)> = entries
        .into_iter()
        .map(|(key, text)| {
            let at = serde_json::from_str::<Admission>(&text).map_or(i64::MIN, |entry| entry.at_ms);
            (at, key)
        })
        .collect();
    dated.sort();
    let excess = dated.len().saturating_sub(JOURNAL_MAX_PER_UNIT);
    for (index, (at, key)) in dated.iter().enumerate() {
        if index < excess || *at < now_ms.saturating_sub(JOURNAL_MAX_AGE_MS) {
            table.remove(key.as_str())?;
        }
    }
    Ok(())
}
