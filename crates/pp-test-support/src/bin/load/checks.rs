//! The load test's end checks: executions against the audit and the disk, and the
//! events each SSE client saw against the store's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pp_test_support::http::Endpoint;
use tokio::sync::Semaphore;

use crate::{REQUEST_LIMIT, Seen, output_content, output_name};

/// Each approval executed exactly once (audit), the writes are on disk, nothing else is.
#[expect(
    clippy::disallowed_methods,
    reason = "the load test reads back its own temporary workspace"
)]
pub(crate) async fn check_executions(
    endpoint: &Endpoint,
    approvals: &[String],
    root: &Path,
    tasks: usize,
    violations: &mut Vec<String>,
) -> std::io::Result<()> {
    let mut executed: BTreeMap<String, usize> = BTreeMap::new();
    let mut before: Option<i64> = None;
    loop {
        let mut path = "/api/audit?action=tool_executed&limit=1000".to_owned();
        if let Some(before) = before {
            path.push_str(&format!("&before={before}"));
        }
        let page = endpoint.get_json(&path, REQUEST_LIMIT).await?;
        let entries = page["entries"].as_array().cloned().unwrap_or_default();
        for entry in &entries {
            let approval = entry["approval_id"].as_str().unwrap_or("(none)").to_owned();
            *executed.entry(approval).or_default() += 1;
        }
        let oldest = entries
            .iter()
            .filter_map(|entry| entry["id"].as_i64())
            .min();
        match oldest {
            Some(oldest) if entries.len() == 1000 => before = Some(oldest),
            _ => break,
        }
    }
    let wanted: BTreeSet<&String> = approvals.iter().collect();
    for id in approvals {
        match executed.get(id) {
            Some(1) => {}
            Some(n) => violations.push(format!(
                "double execution: approval {id} executed {n} times"
            )),
            None => violations.push(format!("lost approval: approval {id} never executed")),
        }
    }
    for (id, n) in &executed {
        if !wanted.contains(id) {
            violations.push(format!("unexpected execution of approval {id} ({n} times)"));
        }
    }
    let workspace = root.join("ws");
    for index in 0..tasks {
        let path = workspace.join(output_name(index));
        let found = std::fs::read_to_string(&path).ok();
        let expected = (index.is_multiple_of(2)).then(|| output_content(index));
        if found != expected {
            violations.push(format!(
                "{}: found {found:?}, expected {expected:?}",
                path.display()
            ));
        }
    }
    Ok(())
}

/// The store's events (every task's, via the API) against what each SSE client saw.
pub(crate) async fn check_events(
    endpoint: &Endpoint,
    task_ids: &BTreeMap<usize, String>,
    clients: &[Arc<Mutex<Seen>>],
    deadline: Instant,
    violations: &mut Vec<String>,
) -> std::io::Result<(usize, usize)> {
    let limit = Arc::new(Semaphore::new(32));
    let fetches: Vec<_> = task_ids
        .values()
        .cloned()
        .map(|id| {
            let endpoint = endpoint.clone();
            let limit = Arc::clone(&limit);
            tokio::spawn(async move {
                let _permit = limit.acquire_owned().await;
                endpoint
                    .get_json(&format!("/api/tasks/{id}/events?limit=5000"), REQUEST_LIMIT)
                    .await
            })
        })
        .collect();
    let mut stored = BTreeSet::new();
    for fetch in fetches {
        let events = fetch
            .await
            .map_err(|error| std::io::Error::other(format!("an events fetch failed: {error}")))??;
        for event in events["events"].as_array().into_iter().flatten() {
            if let Some(seq) = event["seq"].as_u64() {
                stored.insert(seq);
            }
        }
    }
    let newest = stored.last().copied().unwrap_or(0);
    // Streams poll the store; give every client time to reach the newest event.
    let wait_until = deadline.min(Instant::now() + Duration::from_secs(30));
    loop {
        let behind = clients
            .iter()
            .filter(|seen| {
                seen.lock()
                    .map(|seen| seen.seqs.iter().max().copied().unwrap_or(0) < newest)
                    .unwrap_or(true)
            })
            .count();
        if behind == 0 || Instant::now() >= wait_until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut reconnects = 0;
    for (number, seen) in clients.iter().enumerate() {
        let Ok(seen) = seen.lock() else { continue };
        reconnects += seen.reconnects;
        let got: BTreeSet<u64> = seen.seqs.iter().copied().collect();
        let missing: Vec<u64> = stored.difference(&got).copied().collect();
        if !missing.is_empty() {
            violations.push(format!(
                "SSE client {number} lost {} of {} events (first missing seq {:?}; {} reconnects; errors {:?})",
                missing.len(),
                stored.len(),
                missing.first(),
                seen.reconnects,
                seen.errors.iter().take(3).collect::<Vec<_>>()
            ));
        }
        if got.len() != seen.seqs.len() {
            violations.push(format!(
                "SSE client {number} saw {} events twice",
                seen.seqs.len() - got.len()
            ));
        }
        if seen.seqs.windows(2).any(|pair| pair[0] >= pair[1]) {
            violations.push(format!("SSE client {number} saw events out of order"));
        }
        let extra = got.difference(&stored).count();
        if extra > 0 {
            violations.push(format!(
                "SSE client {number} saw {extra} events the store does not list"
            ));
        }
    }
    Ok((stored.len(), reconnects))
}
